/**
 * `make bench-coordination`: CRUCIAL's objects on a 3-server nats-server cluster (R3), real
 * server processes on loopback (separate processes, routes over mutual TLS, as the test
 * cluster). Prints a table per section and writes bench-results/coordination.json and its PNG.
 * Percentiles are nearest rank, ops/s over the elapsed time, host metadata from the machine, the
 * tables and the PNG: @syncmesh-edge/bench-kit.
 *
 *   node coordination/dist/bench/bench-coordination.js [--duration-ms 5000] [--clients 6] [--rounds 30] [--out F]
 *
 * Sections:
 *   counter      Counter.add(1) (server-side increment, JetStream counter stream): `clients`
 *                concurrent clients all connected to one server, then spread over the three
 *   atomic-long  AtomicLong.incrementAndGet() (compare-and-set loop on the KV bucket), same two
 *   barrier      CyclicBarrier rounds with 3 parties (one per server) and 9 (three per server):
 *                the time of a round, from its first await to its last return
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { hostInfo, plotResults, printTable, resultsPath, runFor, summarize, writeResults } from '@syncmesh-edge/bench-kit';
import { Coordination } from '@syncmesh-edge/coordination-sdk';
import { NATS_SERVER_BIN } from '../src/testing/bins.js';
import { NatsCluster } from '../src/testing/cluster.js';

const args = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = args.indexOf(k);
  return i >= 0 && args[i + 1] ? args[i + 1]! : d;
};
const DURATION_MS = Number(opt('--duration-ms', '5000'));
const CLIENTS = Number(opt('--clients', '6'));
const ROUNDS = Number(opt('--rounds', '30'));
const OUT = resolve(opt('--out', resultsPath('coordination')));

const round2 = (x: number) => Math.round(x * 100) / 100;

const dir = mkdtempSync(join(tmpdir(), 'bench-coord-'));
process.stdout.write(`bench-coordination: starting a 3-server cluster (loopback, ${NATS_SERVER_BIN})\n`);
const cluster = await NatsCluster.start({ prefix: 'sbc', netns: false, dir, natsBin: NATS_SERVER_BIN });
const conns: NatsConnection[] = [];
const clientOf = async (node: number) => {
  const nc = await connect({ servers: [cluster.urls[node]!], authenticator: cluster.authenticator(), ignoreClusterUpdates: true });
  conns.push(nc);
  return nc;
};
const results: Record<string, unknown> = {
  startedAt: new Date().toISOString(),
  command: `make bench-coordination BENCH_ARGS="--duration-ms ${DURATION_MS} --clients ${CLIENTS} --rounds ${ROUNDS}"`,
  host: hostInfo(),
  cluster: { servers: 3, placement: 'loopback processes', replicas: 3, nats_server: '2.15.3' },
  params: { duration_ms: DURATION_MS, clients: CLIENTS, rounds: ROUNDS },
};
try {
  const ns = `bench${process.pid % 10000}`;
  const open = async (node: number) => Coordination.open(await clientOf(node), { namespace: ns, replicas: 3, timeoutMs: 30_000 });
  // one node: every client on server 0; three nodes: client i on server i % 3
  const oneNode = await Promise.all(Array.from({ length: CLIENTS }, () => open(0)));
  const threeNodes = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => open(i % 3)));
  const section: Record<string, unknown> = {};
  const rows: (string | number)[][] = [];
  for (const [kind, label] of [
    ['counter', 'Counter.add(1)'],
    ['atomic_long', 'AtomicLong.incrementAndGet()'],
  ] as const) {
    section[kind] = {};
    for (const [where, clients] of [
      ['one_node', oneNode],
      ['three_nodes', threeNodes],
    ] as const) {
      const objs = clients.map((c) => (kind === 'counter' ? c.counter('hits') : c.atomicLong('hits')));
      const op =
        kind === 'counter'
          ? (w: number) => (objs[w] as ReturnType<Coordination['counter']>).add(1)
          : (w: number) => (objs[w] as ReturnType<Coordination['atomicLong']>).incrementAndGet();
      await runFor({ workers: CLIENTS, durationMs: Math.min(1000, DURATION_MS), op }); // warm-up
      const r = await runFor({ workers: CLIENTS, durationMs: DURATION_MS, op });
      const s = summarize(r.latencies_ms);
      (section[kind] as Record<string, unknown>)[where] = { ops: r.ops, ops_per_s: r.ops_per_s, latency_ms: s };
      rows.push([label, where.replace('_', ' '), CLIENTS, r.ops, r.ops_per_s, s.p50, s.p99]);
      process.stdout.write(`  ${label} from ${where}: ${Math.round(r.ops_per_s)}/s\n`);
    }
  }
  Object.assign(results, section);
  printTable(
    `increments, ${CLIENTS} clients, ${DURATION_MS} ms, R3 on 3 servers`,
    ['object', 'clients on', 'clients', 'ops', 'ops/s', 'p50 ms', 'p99 ms'],
    rows,
  );

  const barrier: Record<string, unknown> = {};
  const brows: (string | number)[][] = [];
  for (const parties of [3, 9]) {
    const bs = await Promise.all(
      Array.from({ length: parties }, async (_, p) => (await open(p % 3)).cyclicBarrier(`round-${parties}`, parties, { party: `p${p}` })),
    );
    const starts: number[][] = Array.from({ length: ROUNDS }, () => []);
    const ends: number[][] = Array.from({ length: ROUNDS }, () => []);
    const t0 = performance.now();
    await Promise.all(
      bs.map(async (b) => {
        for (let r = 0; r < ROUNDS; r++) {
          starts[r]!.push(performance.now());
          await b.await({ timeoutMs: 60_000 });
          ends[r]!.push(performance.now());
        }
      }),
    );
    const total = performance.now() - t0;
    const roundMs = starts.map((s, r) => Math.max(...ends[r]!) - Math.min(...s));
    const s = summarize(roundMs);
    barrier[String(parties)] = { rounds: ROUNDS, round_ms: s, rounds_per_s: ROUNDS / (total / 1000) };
    brows.push([parties, ROUNDS, s.p50, s.p99, ROUNDS / (total / 1000)]);
    process.stdout.write(`  barrier of ${parties}: round p50 ${round2(s.p50)} ms\n`);
  }
  results['barrier'] = barrier;
  printTable(`CyclicBarrier rounds on 3 servers (parties spread evenly)`, ['parties', 'rounds', 'round p50 ms', 'round p99 ms', 'rounds/s'], brows);
  writeResults(OUT, results);
  process.stdout.write(`\nwritten ${OUT}, ${plotResults('coordination', OUT)}\n`);
} finally {
  for (const nc of conns) await nc.close().catch(() => undefined);
  await cluster.stop();
}
