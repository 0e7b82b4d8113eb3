/**
 * `make bench-mesh`: aggregate and collect round trips through node-1 for 3, 6, 12 and 30 nodes
 * under the regional profile, with sequential forwarding (as the original Syncmesh aggregated)
 * and with parallel fan-out, on the same mesh and data. The mode is the functions' setting, so
 * the functions are restarted for each mode; the modes alternate in ABBA blocks (parallel,
 * sequential, sequential, parallel), each block after a restart and the same warm-up, so
 * neither mode is measured warmer or later than the other. Statistics are the bench kit's
 * (nearest rank), host metadata is read from the machine. Also the entry node answering alone (no forwarding): its database and function
 * time, the floor under every mesh-wide round trip. Prints its tables (bench-kit's) and writes JSON and its plot (bench-kit's
 * writeResults and plotResults: bench-results/mesh.json and .png).
 *
 * Three queries: a month's aggregate and a 1,000-reading collect make every node's database scan
 * its ~18k readings (the test server has no indexes), so with 30 test servers on 2 cores they are
 * bound by CPU, not by links; the mesh-wide document estimate costs the databases almost nothing
 * and shows the forwarding itself. Each row also reports the databases' time from the answer's
 * `extensions` (the entry's own plus every node's `db_ms`).
 */
import { parseArgs } from 'node:util';
import type { MeshConfig } from '../src/config.js';
import { postFunction, type FunctionAnswer } from '../src/client/client.js';
import { MeshError } from '../src/errors.js';
import { down, status, up, type Progress } from '../src/mesh.js';
import { restartFunctions } from '../src/runtime/process.js';
import { hostInfo, plotResults, printTable, resultsPath, summarize, writeResults } from '@syncmesh-edge/bench-kit';
import { pool } from '@syncmesh-edge/lab';
import { aggregateRequest, collectRequest, DEFAULT_RADIUS_KM, estimateRequest, MONTH_END, MONTH_START } from '../src/client/queries.js';
import { runMeshBench, throwIfInterrupted } from './run.js';

const DEFAULT_SIZES = [3, 6, 12, 30];
const DEFAULT_REPEAT = 7;
const WARMUP = 2;
const WARMUP_PER_NODE = 2;

export interface Stats {
  median_ms: number;
  p90_ms: number;
  min_ms: number;
  samples: number;
}

type Query = 'aggregate' | 'collect' | 'estimate';
const QUERIES: readonly Query[] = ['aggregate', 'collect', 'estimate'];

/** The request for a query, through the mesh (`radius`) or answered by the entry node alone. */
function request(q: Query, mesh: boolean): Record<string, unknown> {
  const opts = mesh ? { radius: DEFAULT_RADIUS_KM } : { useMetaData: false };
  if (q === 'aggregate') return aggregateRequest(MONTH_START, MONTH_END, opts);
  if (q === 'collect') return collectRequest(undefined, undefined, { ...opts, limit: 1000 });
  return estimateRequest(opts);
}

export interface BenchRow {
  nodes: number;
  mode: 'sequential' | 'parallel' | 'local';
  query: Query;
  stats: Stats;
  /** Median over the runs of the databases' time summed over all nodes, and of the slowest node's. */
  db_sum_ms: number;
  db_max_ms: number;
  answered: number;
  asked: number;
}

/** Nearest-rank statistics (the bench kit's one definition), rounded to 0.1 ms. */
function stats(samples: number[]): Stats {
  const s = summarize(samples);
  const r1 = (x: number) => Math.round(x * 10) / 10;
  return { median_ms: r1(s.p50), p90_ms: r1(s.p90), min_ms: r1(s.min), samples: s.count };
}

/** Mode order of the measured blocks: ABBA, so both modes sit equally early and late. */
export const MODE_BLOCKS = ['parallel', 'sequential', 'sequential', 'parallel'] as const;

/** Splits `repeat` samples over the blocks of one mode (the first blocks take the remainder). */
export function blockSizes(repeat: number, blocks: number): number[] {
  return Array.from({ length: blocks }, (_, i) => Math.floor(repeat / blocks) + (i < repeat % blocks ? 1 : 0));
}

type Measured = Pick<BenchRow, 'stats' | 'answered' | 'asked' | 'db_sum_ms' | 'db_max_ms'>;
/** One block's measurement with its raw samples (to join the blocks of a mode). */
type Raw = Measured & { samples: number[]; dbSum: number[]; dbMax: number[] };

/** Database time of one answer: the entry's own (timing.db_ms) plus every forwarded node's db_ms. */
function dbTimes(answer: FunctionAnswer): { sum: number; max: number } {
  const own = Number((answer.extensions?.['timing'] as { db_ms?: number } | undefined)?.db_ms ?? 0);
  const remote = (answer.extensions?.nodes ?? []).map((n) => Number(n['db_ms'] ?? 0));
  const all = [own, ...remote];
  return { sum: all.reduce((a, b) => a + b, 0), max: Math.max(...all) };
}

async function measure(url: string, body: Record<string, unknown>, repeat: number, expectNodes: number, signal: AbortSignal): Promise<Raw> {
  let answered = 0;
  let asked = 0;
  const samples: number[] = [];
  const dbSum: number[] = [];
  const dbMax: number[] = [];
  for (let i = 0; i < WARMUP + repeat; i++) {
    throwIfInterrupted(signal);
    const r = await postFunction(url, body, { timeoutMs: 120_000 });
    if (r.status !== 200 || r.answer.errors?.length) {
      throw new MeshError('EDGE_MESH_REQUEST', `benchmark query failed (${r.status}): ${JSON.stringify(r.answer.errors ?? r.answer).slice(0, 300)}`);
    }
    asked = Number(r.answer.extensions?.['asked'] ?? 1);
    const got = Number(r.answer.extensions?.['answered'] ?? 1);
    if (got !== expectNodes) {
      const failed = r.answer.extensions?.nodes?.filter((n) => n.status !== 'ok') ?? [];
      process.stderr.write(`  only ${got} of ${expectNodes} nodes answered, e.g. ${JSON.stringify(failed[0] ?? {})}\n`);
    }
    if (i >= WARMUP) {
      samples.push(r.rttMs);
      const db = dbTimes(r.answer);
      dbSum.push(db.sum);
      dbMax.push(db.max);
      answered = i === WARMUP ? got : Math.min(answered, got);
    }
  }
  return { stats: stats(samples), answered, asked, db_sum_ms: stats(dbSum).median_ms, db_max_ms: stats(dbMax).median_ms, samples, dbSum, dbMax };
}

/** Joins the blocks of one mode: statistics over all their samples. */
function joinBlocks(parts: readonly Raw[]): Measured {
  const samples = parts.flatMap((p) => p.samples);
  return {
    stats: stats(samples),
    answered: Math.min(...parts.map((p) => p.answered)),
    asked: Math.max(...parts.map((p) => p.asked)),
    db_sum_ms: stats(parts.flatMap((p) => p.dbSum)).median_ms,
    db_max_ms: stats(parts.flatMap((p) => p.dbMax)).median_ms,
  };
}

export async function runBench(base: MeshConfig, progress: Progress, argv: string[], signal: AbortSignal): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string', default: DEFAULT_SIZES.join(',') },
      repeat: { type: 'string', default: String(DEFAULT_REPEAT) },
      latency: { type: 'string', default: 'regional' },
      out: { type: 'string', default: resultsPath('mesh') },
    },
  });
  const sizes = values.nodes!.split(',').map(Number);
  const repeat = Number(values.repeat);
  const rows: BenchRow[] = [];
  const memory: { nodes: number; per_node_rss_mb: number[]; per_node_pss_mb: number[]; total_rss_mb: number; total_pss_mb: number }[] = [];
  const startups: { nodes: number; seconds: number }[] = [];
  // node timeouts high enough that sequential forwarding over 30 nodes is not cut short
  const timeouts = { nodeTimeoutMs: 30_000, deadlineMs: 300_000 };
  const save = () =>
    writeResults(values.out!, {
      date: new Date().toISOString(),
      host: hostInfo(),
      latency: values.latency,
      repeat,
      mode_blocks: MODE_BLOCKS,
      rows,
      startups,
      memory,
    });
  for (const n of sizes) {
    const cfg: MeshConfig = { ...base, ...timeouts, nodes: n, latency: values.latency!, forwardMode: 'parallel' };
    const t0 = performance.now();
    const mesh = await up(cfg, { progress, signal });
    startups.push({ nodes: n, seconds: Math.round((performance.now() - t0) / 100) / 10 });
    try {
      const s = await status(cfg.stateRoot, cfg.name);
      memory.push({
        nodes: n,
        per_node_rss_mb: s.nodes.map((x) => Math.round(x.rssBytes / 1048576)),
        per_node_pss_mb: s.nodes.map((x) => Math.round(x.pssBytes / 1048576)),
        total_rss_mb: Math.round(s.totalRssBytes / 1048576),
        total_pss_mb: Math.round(s.totalPssBytes / 1048576),
      });
      const url = mesh.topology.nodes[0]!.function_url;
      // a fresh JVM is slow until its JIT has compiled the scan: warm every node alone first
      progress(`${n} nodes: warming up every node's database`);
      await pool(mesh.topology.nodes, 2, async (node) => {
        for (let i = 0; i < WARMUP_PER_NODE; i++) {
          throwIfInterrupted(signal);
          for (const q of QUERIES) await postFunction(node.function_url, request(q, false), { timeoutMs: 120_000 });
        }
      });
      progress(`${n} nodes: entry node alone`);
      for (const q of QUERIES) {
        const { samples: _s, dbSum: _a, dbMax: _b, ...m } = await measure(url, request(q, false), repeat, 1, signal);
        rows.push({ nodes: n, mode: 'local', query: q, ...m });
      }
      const sizesOf = blockSizes(repeat, MODE_BLOCKS.length / 2);
      const blocks = new Map<string, Raw[]>();
      const seen = { parallel: 0, sequential: 0 };
      for (const mode of MODE_BLOCKS) {
        // Every block starts from restarted functions (and then the same warm-up), so each mode is equally warm.
        await restartFunctions({ ...cfg, forwardMode: mode }, mode, progress);
        const size = sizesOf[seen[mode]++]!;
        progress(`${n} nodes: ${mode} ${QUERIES.join(', ')} x${size}`);
        for (const q of QUERIES) {
          const key = `${mode}/${q}`;
          blocks.set(key, [...(blocks.get(key) ?? []), await measure(url, request(q, true), size, n, signal)]);
        }
      }
      for (const mode of ['sequential', 'parallel'] as const) {
        for (const q of QUERIES) rows.push({ nodes: n, mode, query: q, ...joinBlocks(blocks.get(`${mode}/${q}`) ?? []) });
      }
    } finally {
      await down(cfg.stateRoot, cfg.name, progress);
      save();
    }
  }

  const row = (n: number, mode: string, q: string) => rows.find((r) => r.nodes === n && r.mode === mode && r.query === q);
  const get = (n: number, mode: string, q: string) => row(n, mode, q)?.stats.median_ms ?? NaN;
  const partial = rows.filter((r) => r.answered !== (r.mode === 'local' ? 1 : r.nodes));
  printTable(
    `Round trip through node-1, median of ${repeat} (ms, nearest rank), latency profile ${values.latency}; sequential and parallel in ABBA blocks, each after a restart and the same warm-up; db = databases' time (sum over nodes / slowest node), parallel runs`,
    ['nodes', 'query', 'local', 'sequential', 'parallel', 'speed-up', 'local/parallel', 'db sum', 'db max'],
    sizes.flatMap((n) =>
      QUERIES.map((q) => {
        const [loc, seq, par] = [get(n, 'local', q), get(n, 'sequential', q), get(n, 'parallel', q)];
        const p = row(n, 'parallel', q);
        return [
          n,
          q,
          loc,
          seq,
          par,
          `${(seq / par).toFixed(1)}x`,
          `${((100 * loc) / par).toFixed(0)} %`,
          Math.round(p?.db_sum_ms ?? NaN),
          Math.round(p?.db_max_ms ?? NaN),
        ];
      }),
    ),
  );
  const first = sizes[0]!;
  const last = sizes[sizes.length - 1]!;
  const lines: string[] = [];
  for (const q of QUERIES) {
    lines.push(
      `${q}: parallel grows ${(get(last, 'parallel', q) / get(first, 'parallel', q)).toFixed(1)}x from ${first} to ${last} nodes, sequential ${(get(last, 'sequential', q) / get(first, 'sequential', q)).toFixed(1)}x`,
    );
  }
  for (const r of partial) lines.push(`note: ${r.nodes} nodes ${r.mode} ${r.query}: only ${r.answered} of ${r.nodes} nodes answered in some runs`);
  process.stdout.write(`${lines.join('\n')}\n`);
  printTable(
    'Start and memory of each mesh (PSS: a shared page counted once; RSS: in every process that maps it)',
    ['nodes', 'start s', 'PSS MB total', 'RSS MB total', 'max PSS MB per node', 'max RSS MB per node'],
    startups.map((s) => {
      const m = memory.find((x) => x.nodes === s.nodes);
      return [
        s.nodes,
        s.seconds,
        m?.total_pss_mb ?? '-',
        m?.total_rss_mb ?? '-',
        Math.max(...(m?.per_node_pss_mb ?? [0])),
        Math.max(...(m?.per_node_rss_mb ?? [0])),
      ];
    }),
  );
  const out = save();
  progress(`results written to ${out}; plot ${plotResults('mesh', out)}`);
  return 0;
}

runMeshBench(runBench);
