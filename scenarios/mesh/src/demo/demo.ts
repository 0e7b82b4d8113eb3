/**
 * `make mesh-demo`: three nodes with real (DATA=) or generated data, one collect and one
 * aggregate query (with a radius) sent to node-1, a readable table, and teardown.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inNetns, removeNamespace, type ExtraNamespace } from '@syncmesh-edge/lab';
import { clientNamespace, startMeshCapture, type MeshTraffic } from '../network/capture.js';
import type { MeshConfig } from '../config.js';
import { postFunction, type TimedAnswer } from '../client/client.js';
import { down, up, type Progress } from '../mesh.js';
import { expectedOf, relDiff } from '../client/oracle.js';
import { aggregateRequest, collectRequest, DEFAULT_RADIUS_KM, MONTH_END, MONTH_START } from '../client/queries.js';
import { join } from 'node:path';
import { counterDemo } from './counter.js';

export const DEMO_NODES = 3;
const DEMO_CLIENT = fileURLToPath(new URL('./client.js', import.meta.url));
const execFileP = promisify(execFile);
const DEMO_NODE_TIMEOUT_MS = 20_000;

interface Row {
  query: string;
  asked: number | string;
  answered: number | string;
  documents: number | string;
  avgT: string;
  avgH: string;
  avgP: string;
  rttMs: string;
  wireBytes: string;
  agentBytes: string;
}

function fmt(n: unknown, digits: number): string {
  return typeof n === 'number' ? n.toFixed(digits) : '-';
}

export async function runDemo(base: MeshConfig, progress: Progress): Promise<number> {
  // a busy 2-core machine runs three cold JVMs: give each node time to answer
  const cfg: MeshConfig = {
    ...base,
    nodes: DEMO_NODES,
    nodeTimeoutMs: Math.max(base.nodeTimeoutMs, DEMO_NODE_TIMEOUT_MS),
    deadlineMs: Math.max(base.deadlineMs, 2 * DEMO_NODE_TIMEOUT_MS),
  };
  const ac = new AbortController();
  const onSignal = () => ac.abort();
  process.on('SIGINT', onSignal);
  const t0 = performance.now();
  let tUp = t0;
  let tQueries = t0;
  let client: ExtraNamespace | undefined;
  try {
    const mesh = await up(cfg, { progress, signal: ac.signal });
    tUp = performance.now();
    const entry = mesh.topology.nodes[0]!;
    // netns: the measured queries come from the client's own namespace, and every packet on the
    // links is counted once (the lab's pcap capture); loopback has no per-node links to capture
    if (cfg.isolation === 'netns') client = await clientNamespace(cfg.name, mesh.plan.subnet!, mesh.plan.bridge!);
    const pcapDir = mkdtempSync(join(tmpdir(), `${cfg.name}-demo-`));
    const measure = async (body: Record<string, unknown>): Promise<[TimedAnswer, MeshTraffic | null]> => {
      if (!client) return [await postFunction(entry.function_url, body), null];
      const capture = await startMeshCapture(mesh.topology, { dir: pcapDir, client });
      try {
        const argv = inNetns(client.netns, [process.execPath, DEMO_CLIENT, entry.function_url, JSON.stringify(body), String(cfg.deadlineMs)]);
        const { stdout } = await execFileP(argv[0]!, argv.slice(1), { maxBuffer: 64 * 1024 * 1024 });
        return [JSON.parse(stdout) as TimedAnswer, await capture.stop()];
      } finally {
        await capture.stop();
        rmSync(pcapDir, { recursive: true, force: true });
      }
    };
    // the first query on a fresh JVM is slow (JIT): warm every node's database once, alone
    progress('warming up every node (one local aggregate each)');
    await Promise.all(
      mesh.topology.nodes.map((n) => postFunction(n.function_url, aggregateRequest(MONTH_START, MONTH_END, { useMetaData: false }), { timeoutMs: 120_000 })),
    );
    progress(`collect (1 day) and aggregate (July) via ${entry.id}, radius ${DEFAULT_RADIUS_KM} km`);
    const [collect, collectWire] = await measure(collectRequest(undefined, undefined, { radius: DEFAULT_RADIUS_KM }));
    const [aggregate, aggWire] = await measure(aggregateRequest(MONTH_START, MONTH_END, { radius: DEFAULT_RADIUS_KM }));

    const row = (name: string, a: TimedAnswer, wire: MeshTraffic | null, docs: unknown, agg?: Record<string, unknown>): Row => ({
      query: name,
      asked: (a.answer.extensions?.['asked'] as number | undefined) ?? '-',
      answered: (a.answer.extensions?.['answered'] as number | undefined) ?? '-',
      documents: typeof docs === 'number' ? docs : '-',
      avgT: fmt(agg?.['average_temperature'], 3),
      avgH: fmt(agg?.['average_humidity'], 3),
      avgP: fmt(agg?.['average_pressure'], 1),
      rttMs: a.rttMs.toFixed(1),
      wireBytes: wire ? String(wire.counted_bytes) : 'n/a',
      agentBytes: wire ? String(wire.agent_bytes) : 'n/a',
    });
    const sensors = collect.answer.data?.['sensors'];
    const agg = aggregate.answer.data?.['sensorsAggregate'] as Record<string, unknown> | undefined;
    const rows = [
      row('collect', collect, collectWire, Array.isArray(sensors) ? sensors.length : undefined),
      row('aggregate', aggregate, aggWire, agg?.['count'], agg),
    ];
    const header: Row = {
      query: 'query',
      asked: 'nodes asked',
      answered: 'answered',
      documents: 'documents',
      avgT: 'avg temp °C',
      avgH: 'avg hum %',
      avgP: 'avg press Pa',
      rttMs: 'RTT ms',
      wireBytes: 'bytes on links',
      agentBytes: 'agent bytes',
    };
    const cols = Object.keys(header) as (keyof Row)[];
    const width = (k: keyof Row) => Math.max(...[header, ...rows].map((r) => String(r[k]).length));
    const line = (r: Row) => cols.map((k) => String(r[k]).padStart(width(k))).join('  ');
    const out = [line(header), cols.map((k) => '-'.repeat(width(k))).join('  '), ...rows.map(line)];

    for (const [name, a] of [
      ['collect', collect],
      ['aggregate', aggregate],
    ] as const) {
      for (const n of a.answer.extensions?.nodes ?? [])
        out.push(`  ${name}: ${n.node} ${n.status} ${fmt(n.ms, 1)} ms${n['reason'] ? ` (${String(n['reason'])})` : ''}`);
      for (const e of a.answer.errors ?? []) out.push(`  ${name}: error ${e.message}`);
    }
    const expected = await expectedOf({ dataDir: cfg.dataDir, uris: mesh.topology.nodes.map((n) => n.mongodb_uri) }, MONTH_START, MONTH_END);
    const ok = agg !== undefined && agg['count'] === expected.count && relDiff(agg['average_temperature'] as number, expected.average_temperature) <= 1e-9;
    out.push(
      `  aggregate vs ${cfg.dataDir ? 'the CSV files' : "the nodes' databases"} computed directly: count ${expected.count}, avg temp ${fmt(expected.average_temperature, 3)} -> ${ok ? 'equal' : 'DIFFERENT'}`,
    );
    process.stdout.write(`\n${out.join('\n')}\n\n`);
    // faasd: a user's stateful function on every node (faas-cli, each node's registry, MISO)
    let counterOk = true;
    if (cfg.runtime === 'faasd') {
      try {
        process.stdout.write(`${(await counterDemo(mesh, progress)).join('\n')}\n\n`);
      } catch (err) {
        counterOk = false;
        process.stdout.write(`  miso-counter: ${(err as Error).message}\n\n`);
      }
    }
    tQueries = performance.now();
    return ok && counterOk ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    const tDown = performance.now();
    if (client) await removeNamespace(client);
    await down(cfg.stateRoot, cfg.name, progress);
    const s = (a: number, b: number) => `${(Math.max(0, b - a) / 1000).toFixed(1)} s`;
    progress(
      `demo finished in ${s(t0, performance.now())} (${cfg.runtime} runtime): mesh up ${s(t0, tUp)}, warm-up + queries + check ${s(tUp, tQueries > tUp ? tQueries : tDown)}, teardown ${s(tDown, performance.now())}`,
    );
  }
}
