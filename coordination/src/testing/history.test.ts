import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COORDINATION_ERROR_CODES, CoordinationError } from '@syncmesh-edge/coordination-sdk';
import fc from 'fast-check';
import { outcomeOf } from './history.js';

const codes = Object.values(COORDINATION_ERROR_CODES);

test('history - an operation is dropped (fail) only when the SDK says it certainly had no effect', () => {
  fc.assert(
    fc.property(fc.constantFrom(...codes), fc.boolean(), fc.boolean(), (code, indeterminate, isWrite) => {
      const out = outcomeOf(new CoordinationError(code, 'x', { indeterminate }), isWrite);
      if (!isWrite) return out === 'fail'; // a read changes nothing: dropping it is always sound
      // a write is dropped only when the SDK vouches that nothing was stored
      return out === (indeterminate || code === COORDINATION_ERROR_CODES.CORRUPT ? 'unknown' : 'fail');
    }),
  );
  // an error that is not the SDK's (a raw JetStream answer, a bug) says nothing: unknown, read or write
  fc.assert(fc.property(fc.string(), fc.boolean(), (message, isWrite) => outcomeOf(new Error(message), isWrite) === 'unknown'));
  assert.equal(outcomeOf('thrown string', true), 'unknown');
});
