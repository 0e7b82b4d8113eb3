/**
 * The write-behind store against a real MongoDB-compatible server: a key that keeps changing is
 * written about once per MISO_PERSIST_DELAY_MS (not back to back while writes are in flight), and
 * what is on disk after close() is the last state. The bounds are logical (each write waits for
 * its timer, `delayMs` after the oldest change it carries), not speeds: a slower server only
 * means fewer writes and longer gaps.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLogger } from '@syncmesh-edge/log';
import { type MongoTarget, resolveMongo } from '@syncmesh-edge/mongo-test-server';
import { MongoStateStore } from '../../src/store/mongo.js';
import type { WireEntry } from '../../src/sync/state.js';

let mongo: MongoTarget;

before(async () => {
  mongo = await resolveMongo();
});

after(async () => {
  await mongo?.stop();
});

test('write-behind - a hot key is written once per delay, and its last state is what stays', async () => {
  const delayMs = 150;
  let version = 0;
  let writes = 0;
  const starts: number[] = [];
  const snapshot = (_fn: string, object: string, name: string): WireEntry => {
    writes++;
    starts.push(performance.now());
    return { object, name, type: 'gcounter', gen: version, state: new Uint8Array(0) };
  };
  const db = `miso_it_write_behind_${process.pid}`;
  const store = new MongoStateStore(mongo.uri, db, delayMs, snapshot, createLogger({ svc: 'test', level: 'silent' }));
  await store.identity('wb');
  const t0 = performance.now();
  while (performance.now() - t0 < 900) {
    version++;
    assert.equal(store.changed('fn', 'o', 'hot'), undefined, 'write-behind: changed() does not wait');
    await new Promise((r) => setImmediate(r));
  }
  const elapsed = performance.now() - t0;
  const timed = starts.length;
  await store.close();
  // Writes made by the timer start at least delayMs apart (the write in flight does not trigger
  // the next one; Date.now() has 1 ms steps). The write close() makes may come sooner.
  for (let i = 1; i < timed; i++) {
    const gap = starts[i]! - starts[i - 1]!;
    assert.ok(gap >= delayMs - 2, `write ${i} started ${gap.toFixed(1)} ms after the previous one (delay ${delayMs} ms)`);
  }
  // One write per timer (delayMs after the oldest unwritten change), plus the one close() makes.
  assert.ok(writes <= Math.ceil(elapsed / delayMs) + 2, `${writes} writes in ${elapsed.toFixed(0)} ms with a ${delayMs} ms delay`);
  assert.ok(version > writes * 5, `${version} changes were coalesced into ${writes} writes`);
  const reader = new MongoStateStore(mongo.uri, db, delayMs, snapshot, createLogger({ svc: 'test', level: 'silent' }));
  await reader.identity('wb');
  const stored = [];
  for await (const e of reader.load()) stored.push(e);
  await reader.close();
  assert.equal(stored.length, 1);
  assert.equal(stored[0]!.gen, version, 'the last change is on disk');
});
