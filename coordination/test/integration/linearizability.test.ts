/**
 * Linearizability checked, not assumed: concurrent clients on a 3-server cluster (each server in
 * its own network namespace) record histories of AtomicLong, Counter and AtomicReference
 * operations while one server is killed (-9) and restarted and another is partitioned from the
 * rest; lincheck (Porcupine) checks the history. Then a barrier of 3 parties on 3 servers and a
 * semaphore contended from all 3.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { Coordination } from '@syncmesh-edge/coordination-sdk';
import { delay, Prng } from '@syncmesh-edge/lab';
import { isRoot, lincheck, NATS_SERVER_BIN, skipReason } from '../../src/testing/bins.js';
import { NatsCluster } from '../../src/testing/cluster.js';
import { HistoryRecorder } from '../../src/testing/history.js';

const skip = skipReason({ netns: true, lincheck: true });
const PREFIX = `${process.env['COORDINATION_TEST_PREFIX'] ?? 'sco'}${process.pid % 10000}`;
const SEED = Number(process.env['COORDINATION_TEST_SEED'] ?? Date.now() % 100000);
const CLIENTS_PER_NODE = 2;

describe('coordination - linearizability on a 3-server cluster', { skip, timeout: 240_000 }, () => {
  let cluster: NatsCluster;
  const conns: NatsConnection[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'coord-lin-'));

  /** One connection per client, pinned to server `node` (reconnects only there). */
  async function clientOf(node: number): Promise<NatsConnection> {
    const nc = await connect({
      servers: [cluster.urls[node]!],
      authenticator: cluster.authenticator(),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      ignoreClusterUpdates: true,
      name: `lin-client-n${node}`,
    });
    conns.push(nc);
    return nc;
  }

  before(async () => {
    console.log(`# seed ${SEED} (COORDINATION_TEST_SEED=${SEED} replays the op choices), prefix ${PREFIX}, ${NATS_SERVER_BIN}`);
    cluster = await NatsCluster.start({ prefix: PREFIX, netns: isRoot, dir, natsBin: NATS_SERVER_BIN });
  });

  after(async () => {
    for (const nc of conns) await nc.close().catch(() => undefined);
    await cluster?.stop();
  });

  test('coordination - histories under kill -9 and a partition are linearizable (Porcupine)', async () => {
    const setup = await Coordination.open(await clientOf(0), { namespace: 'lin', replicas: 3, timeoutMs: 10_000 });
    const rec = new HistoryRecorder();
    rec.init['long.a'] = 0;
    rec.init['counter.c'] = 0;
    await rec.record(99, 0, 'ref.r', 'write', 0, () => setup.atomicReference<number>('r').set(0), true);
    const prng = new Prng(SEED);
    const rand = () => prng.next();
    let running = true;
    const PART = 1;
    const KILL = 2;
    let partitionWindow: [number, number] = [0, 0];

    const clients = [];
    for (let node = 0; node < 3; node++) {
      for (let k = 0; k < CLIENTS_PER_NODE; k++) {
        const id = clients.length;
        const nc = await clientOf(node);
        const coord = await Coordination.open(nc, { namespace: 'lin', timeoutMs: 3_000, attemptTimeoutMs: 1_000 });
        const long = coord.atomicLong('a');
        const counter = coord.counter('c');
        const ref = coord.atomicReference<number>('r');
        clients.push(
          (async () => {
            let lastRef = 0;
            while (running) {
              const x = rand();
              if (x < 0.2) await rec.record(id, node, 'long.a', 'add', 1, () => long.addAndGet(1), true);
              else if (x < 0.35) await rec.record(id, node, 'long.a', 'read', null, () => long.get(), false);
              else if (x < 0.5) await rec.record(id, node, 'counter.c', 'add', 1, () => counter.add(1), true);
              else if (x < 0.6) await rec.record(id, node, 'counter.c', 'read', null, () => counter.get(), false);
              else if (x < 0.72) {
                const v = Math.floor(rand() * 1000);
                await rec.record(id, node, 'ref.r', 'write', v, () => ref.set(v), true);
              } else if (x < 0.86) {
                const got = await rec.record(id, node, 'ref.r', 'read', null, () => ref.get(), false);
                if (typeof got === 'number') lastRef = got;
              } else {
                const v = Math.floor(rand() * 1000);
                await rec.record(id, node, 'ref.r', 'cas', [lastRef, v], () => ref.compareAndSet(lastRef, v), true);
              }
            }
          })(),
        );
      }
    }
    const phase = async (what: string, ms: number) => {
      console.log(`# ${(rec.now() / 1e9).toFixed(1)} s: ${what}`);
      await delay(ms);
    };
    await phase('steady', 3_000);
    await cluster.partition(PART);
    const pStart = rec.now();
    await phase(`node-${PART} partitioned from the others`, 14_000);
    partitionWindow = [pStart, rec.now()];
    await cluster.heal(PART);
    await cluster.waitReady();
    await phase(`node-${PART} healed, every server healthy`, 3_000);
    await cluster.kill(KILL);
    await phase(`node-${KILL} killed (-9)`, 8_000);
    await cluster.restart(KILL);
    await cluster.waitReady();
    await phase(`node-${KILL} restarted, every server healthy`, 3_000);
    running = false;
    await Promise.all(clients);

    const history = join(dir, 'history.json');
    rec.write(history);
    const count = (f: (o: (typeof rec.ops)[number]) => boolean) => rec.ops.filter(f).length;
    const ok = count((o) => o.status === 'ok');
    const unknown = count((o) => o.status === 'unknown');
    const failed = count((o) => o.status === 'fail');
    // the minority side never answers: no op of node-PART's clients that started well inside the
    // partition (1 s after it began) and ended before the heal succeeded
    const [ps, pe] = partitionWindow;
    const minorityOk = count((o) => o.node === PART && o.status === 'ok' && o.call > ps + 1e9 && (o.ret ?? 0) < pe);
    const minorityTried = count((o) => o.node === PART && o.call > ps + 1e9 && (o.ret ?? 0) < pe);
    const majorityOkInPartition = count((o) => o.node !== PART && o.status === 'ok' && o.call > ps + 1e9 && (o.ret ?? 0) < pe);
    const { status, verdict } = lincheck(history, join(dir, 'history.html'));
    console.log(
      `# ops ${rec.ops.length}: ok ${ok}, unknown ${unknown}, failed ${failed}; minority side during the partition: ${minorityTried} tried, ${minorityOk} answered; majority side answered ${majorityOkInPartition}`,
    );
    const { illegal, ...summary } = verdict;
    console.log(`# lincheck: ${JSON.stringify(summary)} (history ${history})`);
    // CI keeps only this output: where each key that is not linearizable gets stuck
    for (const key of (illegal ?? []) as { lines: string[] }[]) for (const line of key.lines) console.log(`# ${line}`);
    assert.equal(status, 0, `not linearizable: ${JSON.stringify(summary)} (the lines above show where); see ${verdict['visualization'] ?? history}`);
    assert.equal(verdict['result'], 'Ok');
    assert.ok(ok > 100, `too few operations completed (${ok}) to mean anything`);
    assert.equal(minorityOk, 0, 'a client of the partitioned server got an answer without a quorum');
    assert.ok(majorityOkInPartition > 0, 'the majority side answered nothing during the partition');
  });

  test('coordination - a barrier of 3 parties on 3 servers releases exactly once per round', async () => {
    const ROUNDS = 5;
    const parties = await Promise.all(
      [0, 1, 2].map(async (node) => {
        const coord = await Coordination.open(await clientOf(node), { namespace: 'lin', timeoutMs: 10_000 });
        return coord.cyclicBarrier('rounds', 3, { party: `node-${node}` });
      }),
    );
    const t0 = process.hrtime.bigint();
    const ns = () => Number(process.hrtime.bigint() - t0);
    const calls: number[][] = [[], [], []];
    const rets: { generation: number; index: number; at: number }[][] = [[], [], []];
    await Promise.all(
      parties.map(async (b, p) => {
        for (let r = 0; r < ROUNDS; r++) {
          calls[p]!.push(ns());
          const a = await b.await({ timeoutMs: 20_000 });
          rets[p]!.push({ ...a, at: ns() });
        }
      }),
    );
    for (let r = 0; r < ROUNDS; r++) {
      const round = rets.map((x) => x[r]!);
      assert.deepEqual(
        round.map((a) => a.generation),
        [r, r, r],
        `round ${r}: every party takes part in generation ${r}`,
      );
      assert.deepEqual(round.map((a) => a.index).sort(), [0, 1, 2], `round ${r}: arrival indexes 2, 1, 0: exactly one party released it`);
      const lastCall = Math.max(...calls.map((c) => c[r]!));
      assert.ok(Math.min(...round.map((a) => a.at)) >= lastCall, `round ${r}: no party left before the last one arrived`);
    }
    assert.equal(await parties[0]!.generation(), ROUNDS, `${ROUNDS} rounds, ${ROUNDS} releases`);
    console.log(`# barrier: ${ROUNDS} rounds of 3 parties on 3 servers, ${ROUNDS} releases`);
  });

  test('coordination - a semaphore never admits more than its permits (counted)', async () => {
    const PERMITS = 2;
    const HOLDERS = 6;
    const ACQUIRES = 5;
    let inside = 0;
    let maxInside = 0;
    let admitted = 0;
    await Promise.all(
      Array.from({ length: HOLDERS }, async (_, h) => {
        const coord = await Coordination.open(await clientOf(h % 3), { namespace: 'lin', timeoutMs: 10_000 });
        const sem = coord.semaphore('gate', PERMITS, { holder: `h${h}` });
        for (let i = 0; i < ACQUIRES; i++) {
          await sem.acquire(1, { timeoutMs: 30_000 });
          inside++;
          admitted++;
          maxInside = Math.max(maxInside, inside);
          await delay(10);
          inside--;
          await sem.release(1);
        }
      }),
    );
    console.log(`# semaphore of ${PERMITS}: ${admitted} admissions by ${HOLDERS} holders on 3 servers, at most ${maxInside} inside at once`);
    assert.equal(admitted, HOLDERS * ACQUIRES);
    assert.ok(maxInside <= PERMITS, `${maxInside} holders inside a semaphore of ${PERMITS}`);
    assert.equal(maxInside, PERMITS, 'the permits were used concurrently');
  });
});
