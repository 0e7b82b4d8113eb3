#!/usr/bin/env node
/**
 * `make bench-allreduce`: AllReduce in the MISO paper's topology (Goronjic & Nastic, 2024: MISO
 * 26.7 % faster than Redis). A local mesh of 5 nodes (scenarios/mesh: namespaces, the regional
 * link profile through toxiproxy, a MISO agent on every node) runs the AllReduce function on
 * every node (bench/allreduce-worker.ts). The same chunks and rounds go, interleaved, to:
 *
 *   miso            each node adds its chunks' sums to a gcounter on its own agent; the agents
 *                   replicate (debounce --debounce-ms) across the emulated links
 *   redis           Debian's redis-server on node-1 is the shared store: every node sends
 *                   INCRBY and GET to it, across its link to node-1 (node-1's own function locally)
 *   redis-replicas  the same primary on node-1 plus a replica on every other node (its
 *                   replication stream through the same links): INCRBY still goes to node-1,
 *                   GET to the node's own replica
 *
 * A round ends when every node's function reads the round's whole sum (AllReduce: every
 * participant holds the result); the time is taken here, from sending the round to every
 * node's function until the last one answers. Prints a table with the command and the load,
 * writes bench-results/allreduce.json (miso_over_redis for each Redis row) and draws
 * allreduce.png (bench-kit's printRows, writeResults and plotResults).
 *
 *   node scenarios/mesh/dist/bench/allreduce.js [--rounds 10] [--len 1000000] [--chunk 10000]
 *        [--concurrency 2] [--debounce-ms 0] [--poll-ms 1] [--warm-ms 3000] [--quick] [--out F]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface, type Interface } from 'node:readline';
import { parseArgs } from 'node:util';
import { hostInfo, plotResults, printRows, resultsPath, summarize, writeResults } from '@syncmesh-edge/bench-kit';
import { hasCommand, inNetns, RespClient, startDetached, waitFor, waitForEvery } from '@syncmesh-edge/lab';
import { MisoClient } from '@syncmesh-edge/miso-sdk';
import { loadConfig, type MeshConfig } from '../src/config.js';
import { MeshError } from '../src/errors.js';
import { linkShapes, toxicsFor } from '../src/network/latency.js';
import { down, up } from '../src/mesh.js';
import { requireState } from '../src/plan/state.js';
import type { NodePlan } from '../src/plan/plan.js';
import { writeState } from '../src/plan/state.js';
import { ToxiproxyClient } from '../src/network/toxiproxy.js';
import { allReduceData, type AllReduceSystem, type WorkerInit, type WorkerRound } from './allreduce-common.js';

const NODES = 5;
const PRIMARY = 1;
const FN = 'allreduce';
const SYSTEMS: AllReduceSystem[] = ['miso', 'redis', 'redis-replicas'];
/** Redis in a node namespace listens on its usual port; the links to it from the host's bridge address. */
const NETNS_REDIS_PORT = 6379;
const NETNS_REDIS_PROXY_BASE = 26000;
/** Loopback fallback: inside the mesh's port range, above the node services (base+0..399). */
const LOOPBACK_REDIS_OFFSET = 400;
const LOOPBACK_REDIS_PROXY_OFFSET = 500;
/** Pause between two measured rounds, so that no system's background work (acks, replication) runs into the next one. */
const BETWEEN_ROUNDS_MS = 200;
/** The paper's figure: MISO 26.7 % faster than Redis, i.e. at most 73.3 % of its time. */
const TARGET_RATIO = 0.733;

const progress = (m: string) => process.stderr.write(`[bench-allreduce ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The function process of one node, spoken to by JSON lines. */
class Worker {
  private readonly lines: Interface;
  private readonly answers: ((m: Record<string, unknown>) => void)[] = [];
  private readonly errors: string[] = [];

  constructor(
    readonly node: NodePlan,
    readonly proc: ChildProcess,
  ) {
    this.lines = createInterface({ input: proc.stdout! });
    this.lines.on('line', (l) => {
      const m = JSON.parse(l) as Record<string, unknown>;
      if (m['type'] === 'error') this.errors.push(String(m['message']));
      this.answers.shift()?.(m);
    });
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => this.errors.push(d.trim()));
    proc.once('exit', (code) => {
      for (const a of this.answers.splice(0)) a({ type: 'error', message: `the function on ${node.id} exited with ${code}: ${this.errors.join(' ')}` });
    });
  }

  /** Sends one command and waits for its answer (throws on an error answer). */
  async ask(m: object): Promise<Record<string, unknown>> {
    const answer = new Promise<Record<string, unknown>>((ok) => this.answers.push(ok));
    this.proc.stdin!.write(`${JSON.stringify(m)}\n`);
    const a = await answer;
    if (a['type'] === 'error') throw new MeshError('EDGE_MESH_REQUEST', `AllReduce function on ${this.node.id}: ${String(a['message'])}`);
    return a;
  }

  close(): void {
    this.proc.stdin!.end();
  }

  /** Resolves once the process has exited, killing it after `graceMs`. */
  async exited(graceMs: number): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const gone = once(this.proc, 'exit');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await gone;
    clearTimeout(t);
  }
}

function redisPort(cfg: MeshConfig, node: NodePlan, base: number | null): number {
  return cfg.isolation === 'netns' ? NETNS_REDIS_PORT : base! + LOOPBACK_REDIS_OFFSET + node.index;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      len: { type: 'string', default: '1000000' },
      chunk: { type: 'string', default: '10000' },
      concurrency: { type: 'string', default: '2' },
      'debounce-ms': { type: 'string', default: '0' },
      'poll-ms': { type: 'string', default: '1' },
      'warm-ms': { type: 'string' },
      out: { type: 'string', default: resultsPath('allreduce') },
    },
  });
  const quick = values.quick!;
  const rounds = Number(values.rounds ?? (quick ? 5 : 10));
  const len = Number(values.len);
  const chunk = Number(values.chunk);
  const concurrency = Number(values.concurrency);
  const debounceMs = Number(values['debounce-ms']);
  const pollMs = Number(values['poll-ms']);
  const warmMs = Number(values['warm-ms'] ?? (quick ? 1000 : 3000));
  for (const [k, v] of Object.entries({ rounds, len, chunk, concurrency, debounceMs, pollMs, warmMs })) {
    if (!Number.isInteger(v) || v < (k === 'debounceMs' || k === 'warmMs' ? 0 : 1)) {
      throw new MeshError(
        'EDGE_MESH_CONFIG',
        `bench-allreduce: ${k} must be a ${k === 'debounceMs' || k === 'warmMs' ? 'non-negative' : 'positive'} integer, got ${v}`,
      );
    }
  }
  if (!hasCommand('redis-server'))
    throw new MeshError('EDGE_MESH_TOOL_MISSING', 'redis-server is missing (Debian package redis-server; make bench-allreduce installs it)');
  const command = `make bench-allreduce${argv.length > 0 ? ` BENCH_ARGS="${argv.join(' ')}"` : ''}`;
  const hostBefore = hostInfo();

  // The paper's topology: 5 nodes, the regional profile, the function and a MISO agent on each.
  const cfg: MeshConfig = { ...loadConfig(), nodes: NODES, latency: 'regional', services: ['function', 'agent'], misoDebounceMs: debounceMs };
  const ac = new AbortController();
  const onSignal = () => {
    progress('interrupted: tearing the mesh down');
    ac.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const workers: Worker[] = [];
  const probes: RespClient[] = [];
  const checkAborted = () => {
    if (ac.signal.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', 'bench-allreduce interrupted');
  };
  const times: Record<AllReduceSystem, number[]> = { miso: [], redis: [], 'redis-replicas': [] };
  const addTimes: Record<AllReduceSystem, number[]> = { miso: [], redis: [], 'redis-replicas': [] };
  let correct = true;
  const data = allReduceData(len, 12345);
  const roundSum = data.reduce((a, b) => a + b, 0);
  const chunks = Math.ceil(len / chunk);
  try {
    const mesh = await up(cfg, { progress, signal: ac.signal });
    const { plan } = mesh;
    const state = requireState(cfg.stateRoot, cfg.name);
    const primary = plan.nodes[PRIMARY - 1]!;

    // Redis: the primary on node-1, a replica on every other node; links to node-1 with the
    // shape of that node's link to node-1 (the same toxiproxy, the same latency model).
    const proxyPort = (n: NodePlan) =>
      cfg.isolation === 'netns' ? NETNS_REDIS_PROXY_BASE + 100 * n.index + PRIMARY : plan.portBase! + LOOPBACK_REDIS_PROXY_OFFSET + n.index;
    const primaryPort = redisPort(cfg, primary, plan.portBase);
    const toxi = new ToxiproxyClient(plan.toxiproxyApi.host, plan.toxiproxyApi.port);
    const coords = new Map(Object.entries(state.coords).map(([k, v]) => [Number(k), v] as const));
    const shapes = linkShapes(cfg.latency, NODES, coords);
    for (const n of plan.nodes) {
      if (n === primary) continue;
      const shape = shapes.find((s) => s.from === n.index && s.to === PRIMARY)!;
      await toxi.createProxy({ name: `${n.id}>${primary.id}:redis`, listen: `${plan.hostAddr}:${proxyPort(n)}`, upstream: `${primary.addr}:${primaryPort}` }, [
        ...toxicsFor(shape.upstream, 'upstream'),
        ...toxicsFor(shape.downstream, 'downstream'),
      ]);
    }
    const bind = cfg.isolation === 'netns' ? '0.0.0.0' : '127.0.0.1';
    for (const n of plan.nodes) {
      const port = redisPort(cfg, n, plan.portBase);
      const replicaOf = n === primary ? [] : ['--replicaof', plan.hostAddr, String(proxyPort(n))];
      // No persistence (as the agents' test servers keep theirs in memory); protected mode off:
      // the proxies connect from the bridge address, and only the mesh's bridge reaches it. Its
      // folder is the node's: a replica still writes the RDB of its first sync to disk, which
      // otherwise landed as dump.rdb in the directory make was run from.
      const argv = [
        'redis-server',
        '--port',
        String(port),
        '--bind',
        bind,
        '--dir',
        n.dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
        ...replicaOf,
      ];
      const rec = startDetached('redis', n.id, n.netns ? inNetns(n.netns, argv) : argv, join(plan.stateDir, 'logs', `${n.id}.redis.log`), {
        PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      });
      state.processes.push(rec);
      writeState(state);
    }
    for (const n of plan.nodes) {
      const port = redisPort(cfg, n, plan.portBase);
      await waitFor(
        `redis of ${n.id}`,
        async () => {
          try {
            const c = await RespClient.open(n.addr, port);
            probes.push(c);
            return true;
          } catch {
            return false;
          }
        },
        30_000,
      );
    }
    progress('redis: primary on node-1, a replica on every other node; waiting for the replicas to sync across their links');
    await waitForEvery(
      'every replica to be in sync',
      async () => {
        const infos = await Promise.all(probes.slice(1).map((c) => c.cmd('INFO', 'replication')));
        return infos.every((i) => /master_link_status:up/.test(String(i)));
      },
      60_000,
      100,
    );

    // The function on every node, in the node's namespace.
    const workerMain = join(dirname(fileURLToPath(import.meta.url)), 'allreduce-worker.js');
    for (const n of plan.nodes) {
      const argv = [process.execPath, '--max-semi-space-size=1', workerMain];
      const full = n.netns ? inNetns(n.netns, argv) : argv;
      const proc = spawn(full[0]!, full.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '', MALLOC_ARENA_MAX: '2' } });
      const w = new Worker(n, proc);
      workers.push(w);
      const local = (port: number) => `${cfg.isolation === 'netns' ? '127.0.0.1' : n.addr}:${port}`;
      const init: WorkerInit = {
        type: 'init',
        node: n.index,
        nodes: NODES,
        len,
        chunk,
        seed: 12345,
        concurrency,
        pollMs,
        sdk: join(n.dir, 'miso.sock'),
        fn: FN,
        redis: n === primary ? local(primaryPort) : `${plan.hostAddr}:${proxyPort(n)}`,
        ...(n === primary ? {} : { replica: local(redisPort(cfg, n, plan.portBase)) }),
      };
      await w.ask(init);
    }
    // Replication goes only to nodes that run the function: wait until every agent knows all five.
    const status = new MisoClient(join(primary.dir, 'miso.sock'), 10_000);
    await waitForEvery(
      `every agent to run ${FN}`,
      async () => (await status.status()).functions.find((f) => f.function === FN)?.nodes.length === NODES,
      60_000,
      100,
    );
    status.close();
    checkAborted();

    progress(`warm-up: ${warmMs} ms of adds and reads on every node against every system at once (not timed)`);
    await Promise.all(workers.map((w) => w.ask({ type: 'warm', ms: warmMs })));
    // Round 0 is not counted either: the first use of each counter (MISO restores a CRDT it does
    // not hold from its peers before the first add, Algorithm 2; Redis creates the key).
    for (let r = 0; r <= rounds; r++) {
      // The order of the systems turns every round, so that none always runs first or last.
      const order = SYSTEMS.map((_, i) => SYSTEMS[(i + r) % SYSTEMS.length]!);
      for (const system of order) {
        checkAborted();
        await sleep(BETWEEN_ROUNDS_MS);
        const key = `sum-${system}`;
        const target = (r + 1) * roundSum;
        const t0 = performance.now();
        const answers = await Promise.all(workers.map((w) => w.ask({ type: 'round', system, key, target } satisfies WorkerRound)));
        const ms = performance.now() - t0;
        if (answers.some((a) => a['value'] !== target)) correct = false;
        if (r > 0) {
          times[system].push(ms);
          addTimes[system].push(Math.max(...answers.map((a) => a['addMs'] as number)));
        }
      }
      progress(`round ${r}${r === 0 ? ' (not counted)' : `/${rounds}`}: ${SYSTEMS.map((s) => `${s} ${(times[s].at(-1) ?? 0).toFixed(1)} ms`).join(', ')}`);
    }
  } finally {
    for (const w of workers) w.close();
    for (const c of probes) c.close();
    // They exit when their stdin closes; one that does not within 2 s is killed.
    await Promise.all(workers.map((w) => w.exited(2_000)));
    await down(cfg.stateRoot, cfg.name, progress);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  const hostAfter = hostInfo();
  const s = (xs: number[]) => summarize(xs);
  const miso = s(times.miso);
  const what: Record<AllReduceSystem, string> = {
    miso: `MISO: adds on the node's own agent, replicated across the links (debounce ${debounceMs} ms); done when every node's agent reads the total`,
    redis: 'Redis on node-1 as the shared store: INCRBY and GET from every node across its link to node-1 (node-1 locally)',
    'redis-replicas': "Redis on node-1 + a replica on each other node: INCRBY to node-1 across the link, GET from the node's own replica",
  };
  const rows = SYSTEMS.map((system) => {
    const sum = s(times[system]);
    return {
      system,
      what: what[system],
      rounds_ms: times[system].map((x) => Math.round(x * 100) / 100),
      total_ms: sum,
      adds_ms: s(addTimes[system]),
      ...(system === 'miso' ? {} : { miso_over_redis: miso.mean / sum.mean, miso_over_redis_p50: miso.p50 / sum.p50 }),
    };
  });
  const load = (h: typeof hostBefore) => h.load_average.map((x) => x.toFixed(2)).join(' ');
  const f = (x: number) => x.toFixed(1);
  printRows(
    `bench-allreduce: ${len} integers in ${chunks} chunks, ${NODES} nodes (regional profile), the function on every node with ${concurrency} concurrent invocations, ${rounds} rounds (+ 1 not counted), interleaved\n` +
      `command: ${command}\nhost: ${hostBefore.cpus} CPUs (${hostBefore.cpu_model}); load average before ${load(hostBefore)}, after ${load(hostAfter)}`,
    rows.map((r) => ({
      system: r.system,
      'mean ms': f(r.total_ms.mean),
      'p50 ms': f(r.total_ms.p50),
      'min ms': f(r.total_ms.min),
      'max ms': f(r.total_ms.max),
      'adds done ms (p50)': f(r.adds_ms.p50),
      'MISO / this': r.miso_over_redis === undefined ? '' : `${(r.miso_over_redis * 100).toFixed(1)} %`,
    })),
  );
  for (const r of rows) process.stdout.write(`  ${r.system}: ${r.what}\n`);
  const verdict = rows.filter((r) => r.miso_over_redis !== undefined).every((r) => r.miso_over_redis! <= TARGET_RATIO);
  process.stdout.write(
    `  every node read the exact total in every round: ${correct}; target: MISO <= 73 % of Redis's total time (the paper's -26.7 %) for both rows: ${verdict ? 'met' : 'NOT met'}\n`,
  );
  const out = writeResults(values.out!, {
    command,
    date: new Date().toISOString(),
    host: hostBefore,
    load_average_after: hostAfter.load_average,
    params: {
      nodes: NODES,
      latency: cfg.latency,
      len,
      chunks,
      chunk,
      concurrency_per_node: concurrency,
      rounds,
      debounce_ms: debounceMs,
      poll_ms: pollMs,
      warm_ms: warmMs,
    },
    correct,
    target_ratio: TARGET_RATIO,
    rows,
  });
  progress(`results written to ${out}; plot ${plotResults('allreduce', out)}`);
  return correct ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench-allreduce: ${err instanceof MeshError ? `${err.code}: ${err.message}` : ((err as Error).stack ?? String(err))}\n`);
    process.exitCode = 1;
  },
);
