/**
 * Runs measurement cells on the local emulated mesh (runOnOneMesh), or on an existing mesh from
 * its topology (runOnExistingMesh: another emulated mesh, the Terraform VMs). Cells with the same
 * node count share one mesh (and, for the baseline, one central server whose ingest is measured
 * once: the data set is the same for every cell of that node count). Per cell: capture on every
 * interface that matters + CPU/memory sampling + one k6 run, started and stopped by the harness.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { down as meshDown, loadConfig as loadMeshConfig, up as meshUp, type MeshHandle, type MeshPlan } from '@syncmesh-edge/mesh';
import {
  startCapture,
  type CaptureTarget,
  type Layout,
  type PhaseTraffic,
  createExtraNamespace,
  extraNamespace,
  removeExtraNamespaces,
  type ExtraNamespace,
} from '@syncmesh-edge/lab';
import { CENTRAL_MONGO_PORT, startCentral, type Central, type IngestResult } from './central.js';
import { DEFAULT_DEADLINE_MS, DEFAULT_NODE_TIMEOUT_MS, type ScenarioConfig, type System, type Workload } from './config.js';
import { ScenarioError } from './errors.js';
import type { CellMesh } from './cell-mesh.js';
import { attachClient, detachClient, meshProcesses, type ExistingMesh } from './existing.js';
import { metricValue, runK6, trend, type K6Outcome, type TrendValues } from './k6.js';
import { moduleLogger } from './log.js';
import { startSampler, type Usage, type WatchedProcess } from './sampler.js';

const log = moduleLogger('run');

export type Progress = (message: string) => void;

export interface CellSpec {
  system: System;
  nodes: number;
  workload: Workload;
  days: number;
  requests: number;
}

export interface RttStats {
  p50: number;
  p95: number;
  max: number;
  avg: number;
  min: number;
}

export interface CellResult extends CellSpec {
  id: string;
  latency: string;
  radius_km: number | null;
  entry: string;
  /** How the entry node found the nodes to ask: external (listed by the client), registry, none (baseline). */
  forward: string;
  /** Unmeasured queries sent before the capture started. */
  warmup_requests: number;
  started_at: string;
  traffic: {
    /** Baseline: every node's readings replayed into the central server (measured once per node count). */
    ingest: PhaseTraffic | null;
    query: PhaseTraffic;
    /** ingest + query, counted bytes (each byte on the emulated network once). */
    total_bytes: number;
    ingest_readings: number | null;
    ingest_ms: number | null;
    note: string;
  };
  rtt_ms: RttStats;
  /** Database time reported by the answering nodes (test server: scans without indexes). */
  db_ms: { entry: RttStats | null; slowest_peer: RttStats | null };
  /** The entry node's (or central function's) own handling time. */
  server_ms: RttStats | null;
  /** Per request: round trip minus that request's slowest database time (network, functions, merge). */
  non_db_ms: RttStats | null;
  result_items: number | null;
  nodes_answered: number | null;
  checks_rate: number | null;
  http_failed_rate: number | null;
  thresholds_ok: boolean;
  k6_duration_ms: number;
  resources: { query: Usage; ingest: Usage | null };
  files: { dir: string; k6_summary: string; k6_log: string };
}

export function cellId(c: CellSpec): string {
  return `${c.system}-n${c.nodes}-${c.workload}-d${c.days}-r${c.requests}`;
}

function stats(t: TrendValues | null): RttStats | null {
  if (!t) return null;
  const r = (x: number) => Math.round(x * 100) / 100;
  return { p50: r(t.med), p95: r(t['p(95)']), max: r(t.max), avg: r(t.avg), min: r(t.min) };
}

/** What the classifier must know about addresses and proxies. */
export function buildLayout(plan: MeshPlan, client: ExtraNamespace, central: Central | null): Layout {
  const byIndex = new Map(plan.nodes.map((n) => [n.index, n.id]));
  return {
    nodes: plan.nodes.map((n) => ({ id: n.id, addr: n.addr, functionPort: n.functionPort, agentPort: n.agentPort, mongoPort: n.mongoPort })),
    clientAddrs: [client.addr],
    proxyHost: {
      addr: plan.hostAddr,
      meshProxies: new Map(plan.links.map((l) => [l.listenPort, { from: byIndex.get(l.from)!, to: byIndex.get(l.to)! }])),
      agentProxies: new Map(plan.agentLinks.map((l) => [l.listenPort, { from: byIndex.get(l.from)!, to: byIndex.get(l.to)! }])),
      ingestProxies: new Map(central?.ingestPorts ?? []),
    },
    central: central ? { addr: central.ns.addr, mongoPort: CENTRAL_MONGO_PORT } : null,
  };
}

function targetsFor(plan: MeshPlan, client: ExtraNamespace, central: Central | null): CaptureTarget[] {
  return [
    { iface: client.hostIf, kind: 'client' },
    ...plan.nodes.map((n) => ({ iface: n.hostIf!, kind: 'node' as const, node: n.id })),
    ...(central ? [{ iface: central.ns.hostIf, kind: 'central' as const }] : []),
  ];
}

function startedMesh(cfg: ScenarioConfig, mesh: MeshHandle, client: ExtraNamespace): CellMesh {
  return {
    nodes: mesh.topology.nodes,
    client,
    latency: cfg.latency,
    captureTargets: (central) => targetsFor(mesh.plan, client, central),
    layout: (central) => buildLayout(mesh.plan, client, central),
    processes: (central, nodes) => watchedProcesses(cfg.stateDir, cfg.meshName, central, nodes),
  };
}

/** Runs a node count's syncmesh cells on `mesh`, in order; returns their results. */
async function runSyncmeshCells(
  cfg: ScenarioConfig,
  cells: readonly CellSpec[],
  mesh: CellMesh,
  groupDir: string,
  progress: Progress,
  onCell: (r: CellResult) => void,
): Promise<CellResult[]> {
  const out: CellResult[] = [];
  for (const spec of cells.filter((c) => c.system === 'syncmesh')) {
    out.push(await runCell(cfg, spec, mesh, null, null, groupDir, progress));
    onCell(out[out.length - 1]!);
  }
  return out;
}

type Ingest = { traffic: PhaseTraffic; result: IngestResult; usage: Usage };

/**
 * Brings up one mesh of the largest node count, runs every cell on it and tears everything down.
 * A Syncmesh cell of n nodes asks node-1 to forward to nodes 2..n over their emulated links
 * (`external_nodes`, as the paper's benchmark did), so the other nodes stay idle. A baseline
 * cell of n nodes queries a fresh central server holding the readings of nodes 1..n, replayed
 * (and captured) once for that node count.
 */
export async function runOnOneMesh(
  cfg: ScenarioConfig,
  cells: readonly CellSpec[],
  runDir: string,
  progress: Progress,
  onCell: (r: CellResult) => void = () => undefined,
): Promise<CellResult[]> {
  const meshNodes = Math.max(...cells.map((c) => c.nodes));
  if (cfg.radiusKm !== undefined && cells.some((c) => c.nodes !== meshNodes)) {
    throw new ScenarioError(
      'EDGE_SCENARIO_CONFIG',
      `SCENARIO_RADIUS_KM forwards through the registry, which lists all ${meshNodes} nodes of the mesh; run one node count at a time with it`,
    );
  }
  const meshCfg = loadMeshConfig({
    PATH: process.env['PATH'],
    MESH_NAME: cfg.meshName,
    MESH_NODES: String(meshNodes),
    MESH_LATENCY: cfg.latency,
    MESH_STATE_DIR: cfg.stateDir,
    MESH_ISOLATION: 'netns',
    MESH_MONGO_STORAGE: cfg.mongoStorage,
    MESH_NODE_TIMEOUT_MS: String(DEFAULT_NODE_TIMEOUT_MS),
    MESH_DEADLINE_MS: String(DEFAULT_DEADLINE_MS),
    TOXIPROXY_BIN: cfg.toxiproxyBin,
    ...(cfg.dataDir ? { MESH_DATA: cfg.dataDir } : {}),
  });
  const logDir = join(runDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  // leftovers of an interrupted run of the same mesh name
  await removeExtraNamespaces(cfg.meshName);
  await meshDown(cfg.stateDir, cfg.meshName);

  progress(`mesh of ${meshNodes} nodes up (${cfg.latency})`);
  const t0 = performance.now();
  let central: Central | null = null;
  const results: CellResult[] = [];
  try {
    const mesh = await meshUp(meshCfg, { progress: (m) => progress(`  mesh: ${m}`) });
    progress(`mesh up in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const client = extraNamespace(cfg.meshName, mesh.plan.subnet!, 'cl');
    await createExtraNamespace(client, mesh.plan.bridge!);
    const cellMesh = startedMesh(cfg, mesh, client);
    const sizes = [...new Set(cells.map((c) => c.nodes))].sort((a, b) => a - b);
    for (const n of sizes) {
      const groupDir = join(runDir, `nodes-${n}`);
      mkdirSync(groupDir, { recursive: true });
      const group = cells.filter((c) => c.nodes === n);
      results.push(...(await runSyncmeshCells(cfg, group, cellMesh, groupDir, progress, onCell)));
      const baseline = group.filter((c) => c.system === 'baseline');
      if (baseline.length === 0) continue;
      progress(`${n} nodes: fresh central server`);
      central = await startCentral(cfg, mesh.topology, n, logDir, meshCfg);
      progress(`${n} nodes: ingest: replaying the readings of nodes 1-${n} into the central server (captured)`);
      const ingest = await measureIngest(cfg, cellMesh, central, groupDir);
      progress(
        `${n} nodes: ingest of ${ingest.result.readings} readings: ${(ingest.traffic.node_central_bytes / 1e6).toFixed(2)} MB on the node->central links in ${(ingest.result.ms / 1000).toFixed(1)} s`,
      );
      for (const spec of baseline) {
        results.push(await runCell(cfg, spec, cellMesh, central, ingest, groupDir, progress));
        onCell(results[results.length - 1]!);
      }
      await central.stop();
      central = null;
    }
    return results;
  } finally {
    progress('teardown');
    if (central) await central.stop().catch((err: unknown) => log.error({ err }, 'stopping the central server failed; removing its namespace anyway'));
    await removeExtraNamespaces(cfg.meshName);
    await meshDown(cfg.stateDir, cfg.meshName);
  }
}

/**
 * Runs syncmesh cells on an existing mesh (`inspectExistingMesh`): no mesh up or down; only the
 * client namespace is added to its bridge (and removed again, also on failure). Every cell must
 * have the mesh's node count; the baseline needs a central server the mesh does not have.
 */
export async function runOnExistingMesh(
  cfg: ScenarioConfig,
  mesh: ExistingMesh,
  cells: readonly CellSpec[],
  runDir: string,
  progress: Progress,
  onCell: (r: CellResult) => void = () => undefined,
): Promise<CellResult[]> {
  const unfit = cells.find((c) => c.system !== 'syncmesh' || c.nodes !== mesh.nodes.length);
  if (unfit)
    throw new ScenarioError(
      'EDGE_SCENARIO_CONFIG',
      `cell ${cellId(unfit)} cannot run on the existing mesh '${mesh.name}': it runs syncmesh cells of its ${mesh.nodes.length} nodes only`,
    );
  progress(`existing mesh '${mesh.name}' (${mesh.nodes.length} nodes, ${mesh.description})`);
  const groupDir = join(runDir, `nodes-${mesh.nodes.length}`);
  mkdirSync(groupDir, { recursive: true });
  try {
    await attachClient(mesh);
    progress(`client namespace ${mesh.client.netns} (${mesh.client.addr}) on ${mesh.bridge}: every node answers`);
    return await runSyncmeshCells(cfg, cells, mesh, groupDir, progress, onCell);
  } finally {
    progress(`removing the client namespace ${mesh.client.netns}`);
    await detachClient(mesh);
  }
}

async function measureIngest(cfg: ScenarioConfig, mesh: CellMesh, central: Central, groupDir: string): Promise<Ingest> {
  const procs = await mesh.processes(central, central.ingestPorts.size);
  const cap = await startCapture('ingest', groupDir, mesh.captureTargets(central), mesh.layout(central));
  const sampler = startSampler(procs, cfg.sampleMs);
  let result: IngestResult;
  let usage: Usage;
  let traffic: PhaseTraffic;
  try {
    result = await central.ingest();
  } finally {
    usage = sampler.stop();
    traffic = await cap.stop();
  }
  if (!cfg.keepPcap) for (const f of traffic.pcap_files) rmSync(f, { force: true });
  return { traffic, result, usage };
}

/** The processes of a cell: toxiproxy, nodes 1..`nodes` (the others stay idle), the central server. */
async function watchedProcesses(stateDir: string, meshName: string, central: Central | null, nodes: number): Promise<WatchedProcess[]> {
  const out = await meshProcesses(stateDir, meshName, nodes);
  for (const svc of central?.services ?? []) out.push({ role: svc.role, node: null, pid: svc.pid });
  return out;
}

async function runCell(
  cfg: ScenarioConfig,
  spec: CellSpec,
  mesh: CellMesh,
  central: Central | null,
  ingest: Ingest | null,
  groupDir: string,
  progress: Progress,
): Promise<CellResult> {
  const id = cellId(spec);
  progress(`${spec.nodes} nodes: ${id}`);
  const dir = join(groupDir, id);
  mkdirSync(dir, { recursive: true });
  const client = mesh.client;
  const baseline = spec.system === 'baseline';
  if (baseline && (!central || !ingest)) throw new ScenarioError('EDGE_SCENARIO_CONFIG', 'a baseline cell needs the central server');
  const first = mesh.nodes[0]!;
  const entry = baseline ? central!.clientUrl : first.function_url;
  // the peers' URLs as node-1's registry holds them (their own addresses; node-1's namespace
  // redirects them to its emulated links): the original client's external_nodes
  const peers = mesh.nodes.slice(1, spec.nodes).map((n) => first.peers[n.id]!);
  const forward = baseline ? 'none' : cfg.radiusKm !== undefined ? 'registry' : 'external';
  const env: Record<string, string> = {
    NODE_URLS: [entry, ...(forward === 'external' ? peers : [])].join(','),
    WORKLOAD: spec.workload,
    DAYS: String(spec.days),
    REQUESTS: String(spec.requests),
    FORWARD: forward,
    ...(forward === 'registry' ? { RADIUS_KM: String(cfg.radiusKm) } : { EXPECT_NODES: baseline ? '1' : String(spec.nodes) }),
  };
  const script = join(cfg.k6Dir, '01.query.js');
  if (cfg.warmup > 0) {
    // unmeasured: the first queries of a fresh JVM/Node process pay for class loading and JIT
    await runK6(cfg.k6Bin, {
      script,
      env: { ...env, REQUESTS: String(cfg.warmup) },
      summaryPath: join(dir, 'k6-warmup-summary.json'),
      netns: client.netns,
      logPath: join(dir, 'k6-warmup.log'),
    });
  }
  const procs = await mesh.processes(central, spec.nodes);
  const startedAt = new Date().toISOString();
  const cap = await startCapture('query', dir, mesh.captureTargets(central), mesh.layout(central));
  const sampler = startSampler(procs, cfg.sampleMs);
  const summaryPath = join(dir, 'k6-summary.json');
  const logPath = join(dir, 'k6.log');
  let outcome: K6Outcome;
  let usage: Usage;
  let query: PhaseTraffic;
  try {
    outcome = await runK6(cfg.k6Bin, { script, env, summaryPath, netns: client.netns, logPath }, (pid) => sampler.watch({ role: 'k6', node: null, pid }));
  } finally {
    usage = sampler.stop();
    query = await cap.stop();
  }
  if (!cfg.keepPcap) for (const f of query.pcap_files) rmSync(f, { force: true });
  const s = outcome.summary;
  progress(
    `  ${id}: ${(((ingest && baseline ? ingest.traffic.counted_bytes : 0) + query.counted_bytes) / 1e6).toFixed(3)} MB, RTT p50 ${trend(s, 'edge_scenarios_rtt_ms')?.med.toFixed(1)} ms${outcome.thresholdsOk ? '' : ' (k6 thresholds crossed: see k6.log)'}`,
  );
  const rtt = stats(trend(s, 'edge_scenarios_rtt_ms'));
  if (!rtt)
    throw new ScenarioError('EDGE_SCENARIO_K6', `the k6 summary ${summaryPath} has no edge_scenarios_rtt_ms (is ${join(cfg.k6Dir, '01.query.js')} current?)`);
  const ingestTraffic = baseline ? ingest!.traffic : null;
  return {
    id,
    ...spec,
    latency: mesh.latency,
    radius_km: baseline ? null : (cfg.radiusKm ?? null),
    entry,
    forward,
    warmup_requests: cfg.warmup,
    started_at: startedAt,
    traffic: {
      ingest: ingestTraffic,
      query,
      total_bytes: (ingestTraffic?.counted_bytes ?? 0) + query.counted_bytes,
      ingest_readings: baseline ? ingest!.result.readings : null,
      ingest_ms: baseline ? ingest!.result.ms : null,
      note: baseline
        ? 'ingest (node->central, measured once for this node count) + queries (client<->central)'
        : "queries only (client<->entry, entry<->peers): readings are written into each node's own database (on a real node by its sensors; here by the mesh's loader before the measured phases) and never cross a link",
    },
    rtt_ms: rtt,
    db_ms: { entry: stats(trend(s, 'edge_scenarios_entry_db_ms')), slowest_peer: baseline ? null : stats(trend(s, 'edge_scenarios_peer_db_ms')) },
    server_ms: stats(trend(s, 'edge_scenarios_server_ms')),
    non_db_ms: stats(trend(s, 'edge_scenarios_non_db_ms')),
    result_items: trend(s, 'edge_scenarios_result_items')?.med ?? null,
    nodes_answered: trend(s, 'edge_scenarios_nodes_answered')?.med ?? null,
    checks_rate: metricValue(s, 'checks', 'rate'),
    http_failed_rate: metricValue(s, 'http_req_failed', 'rate'),
    thresholds_ok: outcome.thresholdsOk,
    k6_duration_ms: outcome.durationMs,
    resources: { query: usage, ingest: baseline ? ingest!.usage : null },
    files: { dir, k6_summary: summaryPath, k6_log: logPath },
  };
}
