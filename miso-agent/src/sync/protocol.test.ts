import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { answerDigest, answerDigestKeys, answerWant, chunkEntries, fullState, makeDigest } from './protocol.js';
import { fromWire, ReplicaState } from './state.js';
import type { Updates } from './messages.js';

function deliver(to: ReplicaState, us: Updates[]): void {
  for (const u of us) for (const w of u.entries) to.merge(u.function, w.object, w.name, fromWire(w));
}

/** One anti-entropy round from a to b (a sends Digest), as the agents run it. */
function antiEntropy(a: ReplicaState, b: ReplicaState, fn: string): number {
  let messages = 1;
  const dk = answerDigest(b, makeDigest(a, fn));
  if (!dk) return messages;
  messages++;
  const r = answerDigestKeys(a, dk, 1 << 20);
  deliver(b, r.updates);
  messages += r.updates.length;
  if (r.want) {
    messages++;
    const back = answerWant(b, r.want, 1 << 20);
    deliver(a, back);
    messages += back.length;
  }
  return messages;
}

test('protocol - equal states answer a digest with nothing', () => {
  const a = new ReplicaState();
  a.applyLocal('f', 'o', 'c', 'gcounter', { op: 'add', n: 1 }, 'a');
  const b = new ReplicaState();
  deliver(b, fullState(a, 'f', 1 << 20));
  assert.equal(answerDigest(b, makeDigest(a, 'f')), undefined);
  assert.equal(antiEntropy(a, b, 'f'), 1);
});

test('protocol - chunks stay under the byte budget', () => {
  const e = { object: 'o', name: 'n', type: 'gset', gen: 0, state: new Uint8Array(100) };
  const chunks = chunkEntries(
    Array.from({ length: 10 }, () => e),
    300,
  );
  assert.equal(chunks.length, 5);
  assert.ok(chunks.every((c) => c.length === 2));
});

test('protocol - one anti-entropy round makes two diverged replicas equal (property, seeded)', () => {
  const op = fc.record({
    side: fc.boolean(),
    obj: fc.constantFrom('o1', 'o2'),
    name: fc.constantFrom('s', 't'),
    value: fc.integer({ min: 0, max: 4 }),
    remove: fc.boolean(),
    del: fc.nat(10),
  });
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const a = new ReplicaState();
      const b = new ReplicaState();
      for (const o of ops) {
        const s = o.side ? a : b;
        if (o.del === 0) s.deleteLocal('f', o.obj, o.name);
        else s.applyLocal('f', o.obj, o.name, 'orset', { op: o.remove ? 'remove' : 'add', value: o.value }, o.side ? 'a' : 'b');
      }
      antiEntropy(a, b, 'f');
      assert.equal(a.rootDigest('f'), b.rootDigest('f'));
      assert.equal(antiEntropy(b, a, 'f'), 1, 'a second round finds nothing to do');
    }),
    { seed: 7, numRuns: 150 },
  );
});
