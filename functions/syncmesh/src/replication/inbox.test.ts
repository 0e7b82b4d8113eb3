import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { createLogger } from '@syncmesh-edge/log';
import { Inbox, type IncomingBatch } from './inbox.js';
import type { ApplyResult, ReplicaStore } from './replicas.js';

/** The records collection, in memory (only what the inbox uses). */
function fakeMeta() {
  const docs = new Map<string, { _id: string; applies: number }>();
  const collection = {
    createIndex: async () => 'at_ttl',
    bulkWrite: async (ops: Array<{ updateOne: { filter: { _id: string }; update: { $inc: { applies: number } } } }>) => {
      for (const { updateOne } of ops) {
        const d = docs.get(updateOne.filter._id) ?? { _id: updateOne.filter._id, applies: 0 };
        d.applies += updateOne.update.$inc.applies;
        docs.set(updateOne.filter._id, d);
      }
    },
    find: (filter: { _id: { $in: string[] } }) => ({ toArray: async () => filter._id.$in.filter((id) => docs.has(id)).map((id) => docs.get(id)!) }),
  };
  return { docs, db: { collection: () => collection } as unknown as Db };
}

/** A replica store whose applies finish when the test says so. */
function fakeReplicas() {
  const applies: Array<{ seq: number; finish: (err?: Error) => void }> = [];
  const store = {
    apply: (_db: string, _coll: string, _origin: string, seq: number) =>
      new Promise<ApplyResult>((resolve, reject) => {
        applies.push({ seq, finish: (err) => (err ? reject(err) : resolve({ upserts: 1, deletes: 0, stale: 0, ms: 12 })) });
      }),
  };
  return { applies, store: store as unknown as ReplicaStore };
}

const log = createLogger({ level: 'silent', svc: 'test' });
const batch = (id: string, seq: number): IncomingBatch => ({ id, db: 'syncmesh', coll: 'sensor_data', seq, ops: [{ op: 'delete', id: seq }] });
const tick = () => new Promise((r) => setImmediate(r));

test('inbox - a batch delivered again while it is being applied is not applied again; both deliveries learn the outcome', async () => {
  const { applies, store } = fakeReplicas();
  const inbox = new Inbox(store, fakeMeta().db, { ttlS: 60, log });
  const first = inbox.receive('n1', [batch('b1', 1)], {});
  const again = inbox.receive('n1', [batch('b1', 1)], {});
  await tick();
  assert.equal(applies.length, 1, 'one apply');
  applies[0]!.finish();
  const [r1, r2] = await Promise.all([first, again]);
  assert.deepEqual(r1.acked, ['b1']);
  assert.deepEqual(r2.acked, ['b1']);
  assert.equal(r1.upserts, 1, 'the request that applied it reports the writes');
  assert.equal(r2.upserts, 0);
  assert.deepEqual(r2.applied, [{ id: 'b1', ops: 1, ms: 12 }], 'the apply time, for flow control');
  const third = await inbox.receive('n1', [batch('b1', 1)], {});
  assert.deepEqual(third.acked, ['b1'], 'already applied: acknowledged at once');
  assert.equal(applies.length, 1);
  assert.deepEqual(inbox.stats()['n1'], {
    applying: 0,
    applies: 1,
    applied_batches: 1,
    duplicate_deliveries: 2,
    failed_applies: 0,
    readings_applied: 1,
    apply_ms: 12,
    last_apply_at: inbox.stats()['n1']!.last_apply_at,
  });
});

test('inbox - an apply longer than the wait is answered "applying"; the status question gets the outcome', async () => {
  const { applies, store } = fakeReplicas();
  const inbox = new Inbox(store, fakeMeta().db, { ttlS: 60, log });
  const r = await inbox.receive('n1', [batch('b1', 1), batch('b2', 2)], { waitMs: 20 });
  assert.deepEqual(r, { acked: [], applying: ['b1', 'b2'], unknown: [], applied: [], upserts: 0, deletes: 0, stale: 0 });
  applies[0]!.finish();
  const s1 = await inbox.status('n1', ['b1', 'b2', 'b3'], 20);
  assert.deepEqual([s1.acked, s1.applying, s1.unknown], [['b1'], ['b2'], ['b3']]);
  await tick();
  applies[1]!.finish();
  const s2 = await inbox.status('n1', ['b2'], 1_000);
  assert.deepEqual(s2.acked, ['b2']);
});

test('inbox - after a restart, a batch the origin sends again (retry) is found in the records and not applied again', async () => {
  const meta = fakeMeta();
  const one = fakeReplicas();
  const before = new Inbox(one.store, meta.db, { ttlS: 60, log });
  const p = before.receive('n1', [batch('b1', 1)], {});
  await tick();
  one.applies[0]!.finish();
  await p;
  assert.equal(meta.docs.get('n1|b1')?.applies, 1, 'recorded before it was acknowledged');
  const two = fakeReplicas();
  const after = new Inbox(two.store, meta.db, { ttlS: 60, log });
  const r = await after.receive('n1', [batch('b1', 1)], { retry: true });
  assert.deepEqual(r.acked, ['b1']);
  assert.equal(two.applies.length, 0, 'not applied again');
  assert.deepEqual((await after.status('n1', ['b1', 'bx'], 0)).unknown, ['bx']);
});

test('inbox - a failed apply is the answer, and the batch is applied when it comes again', async () => {
  const { applies, store } = fakeReplicas();
  const inbox = new Inbox(store, fakeMeta().db, { ttlS: 60, log });
  const p = inbox.receive('n1', [batch('b1', 1)], {});
  await tick();
  applies[0]!.finish(new Error('database down'));
  await assert.rejects(p, /database down/);
  const again = inbox.receive('n1', [batch('b1', 1)], {});
  await tick();
  assert.equal(applies.length, 2);
  applies[1]!.finish();
  assert.deepEqual((await again).acked, ['b1']);
  assert.equal(inbox.stats()['n1']!.failed_applies, 1);
});
