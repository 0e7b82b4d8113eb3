import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { CrdtError } from '../../crdt/index.js';
import { MisoError } from '../../errors.js';
import { toServiceError } from './status.js';
import { checkName, parseOpJson, sdkBindAddress } from './sdk-server.js';

test('status - expected errors keep their message and code, others are masked', () => {
  const e = toServiceError(new CrdtError('EDGE_MISO_UNKNOWN_TYPE', "unknown CRDT type 'x'"));
  assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
  assert.equal(e.details, "unknown CRDT type 'x'");
  assert.deepEqual(e.metadata!.get('edge-error-code'), ['EDGE_MISO_UNKNOWN_TYPE']);
  assert.equal(toServiceError(new MisoError('EDGE_MISO_WRONG_TYPE', 'w')).code, grpc.status.FAILED_PRECONDITION);
  const internal = toServiceError(new Error('secret internals'));
  assert.equal(internal.code, grpc.status.INTERNAL);
  assert.doesNotMatch(internal.details!, /secret/);
});

test('sdk - names and op JSON are validated with clear messages', () => {
  assert.throws(() => checkName('object', ''), /object is required/);
  assert.throws(() => checkName('name', 'a'.repeat(300)), /300 bytes; the limit is 256/);
  // the limit is in UTF-8 bytes, also for names shorter than 256 UTF-16 units
  assert.throws(() => checkName('name', '\u00e9'.repeat(129)), /258 bytes; the limit is 256/);
  assert.equal(checkName('name', '\u00e9'.repeat(128)), '\u00e9'.repeat(128));
  assert.equal(checkName('name', 'a'.repeat(256)), 'a'.repeat(256));
  assert.throws(() => checkName('name', 'a\u0000b'), /NUL/);
  assert.throws(
    () => parseOpJson('{'),
    (e: unknown) => e instanceof MisoError && e.code === 'EDGE_MISO_BAD_REQUEST',
  );
});

test('sdk - the SDK endpoint is a unix socket or loopback only', () => {
  assert.equal(sdkBindAddress('/run/miso/agent.sock'), 'unix:/run/miso/agent.sock');
  assert.equal(sdkBindAddress('127.0.0.1:0'), '127.0.0.1:0');
  assert.throws(() => sdkBindAddress('0.0.0.0:7651'), /local only/);
});
