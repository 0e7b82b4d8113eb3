/**
 * The SDK's objects against a real nats-server (one server on loopback, R1; no root): what each
 * does, and the clear errors for bad input.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { Coordination, CoordinationError } from '@syncmesh-edge/coordination-sdk';
import { NATS_SERVER_BIN, skipReason } from '../../src/testing/bins.js';
import { NatsCluster } from '../../src/testing/cluster.js';

const code = (c: string) => (err: unknown) => err instanceof CoordinationError && err.code === c;

describe('coordination - shared objects on one nats-server', { skip: skipReason(), timeout: 60_000 }, () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  let coord: Coordination;

  before(async () => {
    cluster = await NatsCluster.start({ prefix: 'scp', nodes: 1, netns: false, dir: mkdtempSync(join(tmpdir(), 'coord-prim-')), natsBin: NATS_SERVER_BIN });
    nc = await connect({ servers: cluster.urls, authenticator: cluster.authenticator() });
    coord = await Coordination.open(nc, { namespace: 'prim', replicas: 1 });
  });
  after(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  test('coordination - AtomicLong, Counter, AtomicReference and AtomicMap', async () => {
    const l = coord.atomicLong('l');
    assert.equal(await l.get(), 0);
    assert.equal(await l.incrementAndGet(), 1);
    assert.equal(await l.addAndGet(5), 6);
    assert.equal(await l.compareAndSet(5, 9), false);
    assert.equal(await l.compareAndSet(6, 9), true);
    assert.equal(await l.getAndAdd(1), 9);
    const c = coord.counter('c');
    assert.equal(await c.get(), 0);
    assert.equal(await c.add(3), 3);
    assert.equal(await c.add(-1), 2);
    const r = coord.atomicReference<{ v: number }>('r');
    assert.equal(await r.get(), null);
    assert.equal(await r.compareAndSet(null, { v: 1 }), true);
    assert.deepEqual(await r.getAndSet({ v: 2 }), { v: 1 });
    assert.equal(await r.compareAndSet({ v: 1 }, { v: 3 }), false);
    const m = coord.atomicMap<number[]>('centroids');
    assert.equal(await m.putIfAbsent('c 1', [1, 2]), null);
    assert.deepEqual(await m.putIfAbsent('c 1', [0]), [1, 2]);
    assert.equal(await m.compareAndSet('c 1', [1, 2], [3, 4]), true);
    assert.deepEqual(await m.get('c 1'), [3, 4]);
    assert.deepEqual(await m.keys(), ['c 1']);
    assert.deepEqual(await m.remove('c 1'), [3, 4]);
    assert.equal(await m.get('c 1'), null);
  });

  test('coordination - CountDownLatch, CyclicBarrier, Semaphore and Future', async () => {
    const latch = coord.countDownLatch('l', 2);
    const waiting = latch.await({ timeoutMs: 5_000 });
    assert.equal(await latch.countDown(), 1);
    assert.equal(await latch.countDown(), 0);
    await waiting;
    const parties = [0, 1, 2].map((i) => coord.cyclicBarrier('b', 3, { party: `p${i}` }));
    const arrivals = await Promise.all(parties.map((b) => b.await({ timeoutMs: 5_000 })));
    assert.deepEqual(arrivals.map((a) => a.index).sort(), [0, 1, 2]);
    assert.equal(await parties[0]!.generation(), 1);
    const s1 = coord.semaphore('s', 1, { holder: 'a' });
    const s2 = coord.semaphore('s', 1, { holder: 'b' });
    await s1.acquire();
    assert.equal(await s2.tryAcquire(), false);
    const later = s2.acquire(1, { timeoutMs: 5_000 });
    await s1.release();
    await later;
    assert.equal(await s1.availablePermits(), 0);
    const f = coord.future<string>('f');
    const got = f.get({ timeoutMs: 5_000 });
    await f.complete('done');
    assert.equal(await got, 'done');
  });

  test('coordination - a "wrong last sequence" answer from a second responder makes no write apply twice or get lost', async () => {
    // Right after a partition heals, the deposed leader of a stream still holds the stream's
    // subscription until it hears of the new term: a publish reaches both leaders, and the deposed
    // one may answer "wrong last sequence" from its old state while the real leader stores the
    // message (the linearizability test's failures at the heal). Here a plain subscriber plays the
    // deposed leader: it answers every write of the key with that error, racing JetStream's answer.
    const ns = await Coordination.open(nc, { namespace: 'deposed', replicas: 1 });
    const liar = await connect({ servers: cluster.urls, authenticator: cluster.authenticator() });
    let lies = 0;
    liar.subscribe('crucial.deposed.obj.long.n', {
      callback: (_err, m) => {
        lies++;
        m.respond(JSON.stringify({ error: { code: 400, err_code: 10071, description: 'wrong last sequence: 0' } }));
      },
    });
    await liar.flush();
    try {
      const CLIENTS = 3;
      const EACH = 40;
      let unknown = 0; // indeterminate: the SDK could not tell whether the increment was stored
      const results = await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          const l = ns.atomicLong('n');
          const got: number[] = [];
          for (let i = 0; i < EACH; i++) {
            try {
              got.push(await l.incrementAndGet());
            } catch (err) {
              if (!(err instanceof CoordinationError && err.indeterminate)) throw err;
              unknown++;
            }
          }
          return got;
        }),
      );
      const ok = results.flat().sort((a, b) => a - b);
      const value = await ns.atomicLong('n').get();
      // no increment applied twice, none reported done that was not: each answer is a distinct
      // value, and the counter holds the answered ones plus at most the indeterminate ones
      assert.equal(new Set(ok).size, ok.length, `an answer came twice: ${ok}`);
      assert.ok(ok.length > 0 && ok[ok.length - 1]! <= value, `answers ${ok.length}, last ${ok[ok.length - 1]}, value ${value}`);
      assert.ok(value >= ok.length && value <= ok.length + unknown, `value ${value}: ${ok.length} answered, ${unknown} indeterminate`);
      assert.ok(lies >= CLIENTS * EACH, `the second responder answered every write (${lies})`);
    } finally {
      await liar.close();
    }
  });

  test('coordination - bad input: clear errors, nothing written', async () => {
    await assert.rejects(Coordination.open(nc, { namespace: 'bad.bucket' }), code('EDGE_COORDINATION_SDK_BAD_NAME'));
    await assert.rejects(Coordination.open(nc, { namespace: 'bad bucket*' }), code('EDGE_COORDINATION_SDK_BAD_NAME'));
    await assert.rejects(Coordination.open(nc, { namespace: 'r3', replicas: 3 }), code('EDGE_COORDINATION_SDK_UNAVAILABLE'), 'R3 on one server: a clear error');
    assert.throws(() => coord.atomicLong('a.b'), code('EDGE_COORDINATION_SDK_BAD_NAME'));
    // a CAS on a missing key
    await assert.rejects(coord.atomicMap('m').compareAndSet('nope', 1, 2), code('EDGE_COORDINATION_SDK_KEY_MISSING'));
    await assert.rejects(coord.atomicReference('never').compareAndSet(1, 2), code('EDGE_COORDINATION_SDK_KEY_MISSING'));
    // a latch counted below zero
    const latch = coord.countDownLatch('once', 1);
    await latch.countDown();
    await assert.rejects(latch.countDown(), code('EDGE_COORDINATION_SDK_LATCH_BELOW_ZERO'));
    assert.equal(await latch.getCount(), 0);
    // a barrier awaited by more parties than declared
    const two = [0, 1].map((i) => coord.cyclicBarrier('pair', 2, { party: `p${i}` }));
    await Promise.all(two.map((b) => b.await({ timeoutMs: 5_000 })));
    await assert.rejects(coord.cyclicBarrier('pair', 2, { party: 'p2' }).await({ timeoutMs: 1_000 }), code('EDGE_COORDINATION_SDK_BARRIER_FULL'));
    await assert.rejects(coord.cyclicBarrier('pair', 3, { party: 'p0' }).await({ timeoutMs: 1_000 }), code('EDGE_COORDINATION_SDK_MISMATCH'));
    // others
    await assert.rejects(
      coord
        .future('f1')
        .complete(1)
        .then(() => coord.future('f1').complete(2)),
      code('EDGE_COORDINATION_SDK_ALREADY_SET'),
    );
    await assert.rejects(coord.semaphore('s2', 1, { holder: 'x' }).release(), code('EDGE_COORDINATION_SDK_NOT_HELD'));
    await assert.rejects(coord.atomicLong('l2').addAndGet(0.5), code('EDGE_COORDINATION_SDK_BAD_ARGUMENT'));
    await assert.rejects(coord.atomicReference('big').set('x'.repeat(300_000)), code('EDGE_COORDINATION_SDK_VALUE_TOO_LARGE'));
    await assert.rejects(coord.countDownLatch('never', 1).await({ timeoutMs: 200 }), code('EDGE_COORDINATION_SDK_TIMEOUT'));
  });
});
