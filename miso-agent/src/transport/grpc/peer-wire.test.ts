import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodePeerMessage, encodePeerMessage, encodeUpdatesBody, withSeq } from './peer-wire.js';

test('peer wire - an Updates body encoded once plus a seq decodes like the whole message', () => {
  const entries = Array.from({ length: 50 }, (_, i) => ({ object: `o${i}`, name: 'n', type: 'gcounter', gen: i % 3, state: new Uint8Array(40).fill(i) }));
  const body = encodeUpdatesBody('fn', entries);
  for (const seq of [0, 1, 127, 128, 300, 2 ** 32 + 5]) {
    const fast = withSeq(body, seq);
    // protobufjs writes an explicit seq 0; withSeq leaves it out (the same value in proto3).
    if (seq > 0) assert.deepEqual(fast, encodePeerMessage({ updates: { function: 'fn', entries, seq } }), `seq ${seq}`);
    const m = decodePeerMessage(fast) as { updates: { seq: number; entries: unknown[] } };
    assert.equal(m.updates.seq, seq);
    assert.equal(m.updates.entries.length, 50);
  }
});
