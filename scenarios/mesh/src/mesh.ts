/**
 * Bringing a mesh up and down, cutting nodes off and restoring them, and reporting its status.
 *
 * Order of `up` (every step records itself in the state file first, so `down` can undo any
 * prefix of it): preflight (changes nothing) -> bridge -> toxiproxy with one proxy per directed
 * pair (and one more per pair for the agents' links) -> per node (a few at a time): namespace
 * (with the redirects of its peers' addresses to its links), MongoDB, data, function ->
 * registries -> link profile -> topology.json.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MeshConfig } from './config.js';
import { generatedLocation } from '@syncmesh-edge/syncmesh-fn/load';
import { addOwnNode, upsertPeers, ownNode } from './client.js';
import { MeshError, squashError } from './errors.js';
import { linkShapes, validateProfile } from './latency.js';
import { loadNodeData } from './load.js';
import { moduleLogger } from './log.js';
import { createMeshBridge, createNodeNetwork, cutNodeFirewall, preflightNetwork, removeMeshNetwork, restoreNodeFirewall } from './network.js';
import { hostPorts, linkProxies, planMesh, parseNodeRef, type MeshPlan, type NodePlan } from './plan.js';
import { DATABASE_SERVICES, functionService, NODE_SERVICES, nodeServices, writeKeyFileFor, type NodeService, type ServiceContext } from './services.js';
import { readState, writeState, type MeshState } from './state.js';
import {
  hostListeners,
  httpOk,
  inNetns,
  isAlive,
  pool,
  portTaken,
  rssBytes,
  pssBytes,
  startDetached,
  stopProcess,
  tail,
  waitFor,
  type ProcessRecord,
} from '@syncmesh-edge/lab';
import { buildTopology, type Topology } from './topology.js';
import { faasdNodeMemory, stopFaasdNodes, upFaasd } from './runtime-faasd.js';
import { ToxiproxyClient } from './toxiproxy.js';

const log = moduleLogger('mesh');
/** Nodes whose registries are filled at once (each gets N-1 signed addNode requests). */
const REGISTRY_CONCURRENCY = 8;

export type Progress = (message: string) => void;

export interface UpOptions {
  /** Load data into each node (default true). Plumbing tests turn it off. */
  loadData?: boolean;
  /** Fill every node's registry with its peers (default true). */
  fillRegistry?: boolean;
  progress?: Progress;
  /** Aborts the start (Ctrl-C); everything created so far is removed. */
  signal?: AbortSignal;
}

export interface MeshHandle {
  readonly plan: MeshPlan;
  readonly topology: Topology;
  readonly secret: string;
}

/** Minimal environment for node processes: nothing of ours leaks into them. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
  for (const k of ['LANG', 'HOME', 'JAVA_HOME', 'TZ']) if (process.env[k]) env[k] = process.env[k]!;
  return env;
}

export function planFor(cfg: MeshConfig): MeshPlan {
  return planMesh({
    name: cfg.name,
    nodes: cfg.nodes,
    isolation: cfg.isolation,
    subnet: cfg.subnet,
    portBase: cfg.portBase,
    stateRoot: cfg.stateRoot,
    agentLinks: agentsLinkedThroughProxies(cfg),
  });
}

/**
 * Do the agents reach each other through the link proxies? With static peers (the faasd runtime
 * always has them) yes; with mDNS they dial the addresses they find, so their links stay direct.
 */
export function agentsLinkedThroughProxies(cfg: MeshConfig): boolean {
  if (cfg.runtime === 'faasd') return true;
  return cfg.services.includes('agent') && cfg.misoDiscovery === 'static';
}

/** What the start prints about the links: how many proxies, and whether the agents bypass them. */
export function linksProgress(cfg: MeshConfig, plan: MeshPlan): string {
  const agents =
    plan.agentLinks.length > 0
      ? ` and ${plan.agentLinks.length} agent links`
      : cfg.services.includes('agent') && cfg.misoDiscovery === 'mdns'
        ? '; the MISO agents find each other by mDNS and connect directly: their links are not emulated (no latency; a cut stops them by its iptables rule only)'
        : '';
  return `toxiproxy on ${plan.toxiproxyApi.host}:${plan.toxiproxyApi.port} with ${plan.links.length} directed function links${agents}`;
}

function csvFor(cfg: MeshConfig, node: NodePlan): string | undefined {
  return cfg.dataDir ? join(cfg.dataDir, `${node.index}.csv`) : undefined;
}

/** Everything `up` checks before it changes anything. */
export async function preflight(cfg: MeshConfig, plan: MeshPlan, opts: UpOptions = {}): Promise<void> {
  const existing = readState(plan.stateDir);
  if (existing) {
    throw new MeshError(
      'EDGE_MESH_ALREADY_UP',
      `mesh '${plan.name}' already has state in ${plan.stateDir} (phase ${existing.phase}); run make mesh-down MESH_NAME=${plan.name} first`,
    );
  }
  validateProfile(cfg.latency, cfg.nodes);
  const need: [string, string][] = [
    [cfg.toxiproxyBin, 'toxiproxy (run: make tools)'],
    [cfg.functionMain, 'the Syncmesh function (run: make build)'],
    ...(cfg.services.includes('listener') ? [[cfg.listenerMain, 'the change-stream listener (run: make build)'] as [string, string]] : []),
    ...(cfg.services.includes('agent') ? [[cfg.agentMain, 'the MISO agent (run: make build)'] as [string, string]] : []),
  ];
  if (opts.loadData !== false) need.push([cfg.loadCli, 'the Syncmesh data loader (run: make build)']);
  for (const [file, what] of need) {
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      throw new MeshError('EDGE_MESH_TOOL_MISSING', `${what} is missing: ${file}`, { cause: err });
    }
  }
  if (opts.loadData !== false && cfg.dataDir) {
    const missing = plan.nodes.map((n) => csvFor(cfg, n)!).filter((f) => !existsSync(f));
    if (missing.length > 0) {
      throw new MeshError('EDGE_MESH_DATA', `DATA=${cfg.dataDir} lacks ${missing.length} of the ${plan.nodes.length} sensor files, e.g. ${missing[0]}`);
    }
  }
  if (plan.isolation === 'netns') await preflightNetwork(plan);
  const listeners = hostListeners();
  // in netns mode the proxies listen on the bridge address, which does not exist yet; wildcard
  // listeners on the same ports would still take them
  const taken = hostPorts(plan).filter((p) => portTaken(listeners, p.host, p.port));
  if (taken.length > 0) {
    throw new MeshError(
      'EDGE_MESH_PORT_TAKEN',
      `cannot start mesh '${plan.name}': ports already in use: ${taken
        .slice(0, 5)
        .map((p) => `${p.host}:${p.port} (${p.what})`)
        .join(
          ', ',
        )}${taken.length > 5 ? ` and ${taken.length - 5} more` : ''}; stop what listens there, or set ${plan.isolation === 'loopback' ? 'MESH_PORT_BASE' : 'MESH_NAME'}`,
    );
  }
}

/**
 * The first step of every runtime's start: the state folder, the mesh secret and the clients'
 * write key (separate from the mesh secret; functions read it from write-key), and the state
 * file in phase "starting".
 */
export function beginMesh(cfg: MeshConfig, plan: MeshPlan, runtime?: 'faasd'): { secret: string; secretFile: string; state: MeshState } {
  mkdirSync(join(plan.stateDir, 'logs'), { recursive: true });
  const secret = cfg.secret ?? randomBytes(32).toString('hex');
  const secretFile = join(plan.stateDir, 'secret');
  writeFileSync(secretFile, secret, { mode: 0o600 });
  writeFileSync(writeKeyFileFor(secretFile), randomBytes(32).toString('hex'), { mode: 0o600 });
  const state: MeshState = {
    version: 1,
    name: plan.name,
    ...(runtime ? { runtime } : {}),
    phase: 'starting',
    createdAt: new Date().toISOString(),
    latency: cfg.latency,
    dataDir: cfg.dataDir ?? null,
    forwardMode: cfg.forwardMode,
    plan,
    processes: [],
    cut: [],
    coords: {},
  };
  writeState(state);
  return { secret, secretFile, state };
}

/** Brings a mesh up. On any failure or abort, removes everything it created and rethrows. */
export async function up(cfg: MeshConfig, opts: UpOptions = {}): Promise<MeshHandle> {
  if (cfg.runtime === 'faasd') return upFaasd(cfg, opts);
  const progress = opts.progress ?? (() => undefined);
  const plan = planFor(cfg);
  await preflight(cfg, plan, opts);

  const { secret, secretFile, state } = beginMesh(cfg, plan);
  const t0 = performance.now();
  const aborted = () => {
    if (opts.signal?.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted`);
  };

  try {
    if (plan.isolation === 'netns') {
      progress(`bridge ${plan.bridge} ${plan.subnet} (host ${plan.hostAddr})`);
      await createMeshBridge(plan);
    }
    aborted();

    progress(linksProgress(cfg, plan));
    const toxi = await startToxiproxy(cfg, plan, state);
    await toxi.createLinks(linkProxies(plan));
    aborted();

    let started = 0;
    await pool(plan.nodes, cfg.startConcurrency, async (node) => {
      aborted();
      const t = performance.now();
      const ctx: ServiceContext = { cfg, plan, node, secretFile, forwardMode: cfg.forwardMode };
      mkdirSync(node.dir, { recursive: true });
      if (plan.isolation === 'netns') await createNodeNetwork(plan, node);
      for (const svc of DATABASE_SERVICES) await startService(svc, ctx, state, opts.signal);
      let loaded = '';
      if (opts.loadData !== false) {
        const count = await loadNodeData(cfg, node, csvFor(cfg, node));
        loaded = `, ${count} readings`;
      }
      for (const svc of nodeServices(cfg)) await startService(svc, ctx, state, opts.signal);
      started++;
      progress(`${node.id} ready at ${node.addr} (${((performance.now() - t) / 1000).toFixed(1)} s${loaded}) [${started}/${plan.nodes.length}]`);
    });
    aborted();

    return await finishMesh(cfg, plan, state, toxi, secret, opts, aborted, t0, 'mesh');
  } catch (err) {
    throw await abandonStart(cfg, plan, state, opts, err, 'mesh');
  }
}

/**
 * The last steps of a start, the same for both runtimes once every node runs: the registries, the
 * link profile, the state marked up and the topology written. `label` names the mesh in the log.
 */
export async function finishMesh(
  cfg: MeshConfig,
  plan: MeshPlan,
  state: MeshState,
  toxi: ToxiproxyClient,
  secret: string,
  opts: UpOptions,
  aborted: () => void,
  t0: number,
  label: string,
): Promise<MeshHandle> {
  const progress = opts.progress ?? (() => undefined);
  if (opts.fillRegistry !== false) {
    progress('registries: own locations and peers');
    await fillRegistries(plan, secret, state, opts.loadData !== false);
  }
  aborted();

  const coords = new Map(Object.entries(state.coords).map(([k, v]) => [Number(k), v] as const));
  progress(`links: profile ${cfg.latency}`);
  await toxi.applyShapes(linkProxies(plan), linkShapes(cfg.latency, plan.nodes.length, coords));

  state.phase = 'up';
  writeState(state);
  const topology = buildTopology(state);
  writeTopology(plan, topology);
  progress(
    `${label} '${plan.name}' up: ${plan.nodes.length} nodes in ${((performance.now() - t0) / 1000).toFixed(1)} s; topology in ${join(plan.stateDir, 'topology.json')}`,
  );
  return { plan, topology, secret };
}

/** A start that failed or was interrupted: marks the state failed, removes everything it created, and returns the error to throw. */
export async function abandonStart(cfg: MeshConfig, plan: MeshPlan, state: MeshState, opts: UpOptions, err: unknown, label: string): Promise<unknown> {
  const progress = opts.progress ?? (() => undefined);
  state.phase = 'failed';
  writeState(state);
  log.info({ err }, `${label} start failed; removing what was created`);
  progress(opts.signal?.aborted ? 'interrupted; removing what was created' : 'start failed; removing what was created');
  await down(cfg.stateRoot, plan.name, progress);
  return opts.signal?.aborted
    ? new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted; everything it created was removed`, { cause: err })
    : err;
}

export async function startToxiproxy(cfg: MeshConfig, plan: MeshPlan, state: MeshState): Promise<ToxiproxyClient> {
  const logFile = join(plan.stateDir, 'logs', 'toxiproxy.log');
  const rec = startDetached(
    'toxiproxy',
    null,
    [cfg.toxiproxyBin, '-host', plan.toxiproxyApi.host, '-port', String(plan.toxiproxyApi.port)],
    logFile,
    baseEnv(),
  );
  state.processes.push(rec);
  writeState(state);
  const client = new ToxiproxyClient(plan.toxiproxyApi.host, plan.toxiproxyApi.port);
  await waitFor(
    'toxiproxy',
    () => httpOk(`${client.base}/version`),
    cfg.readyTimeoutMs,
    () => assertAlive(rec),
  );
  return client;
}

function assertAlive(rec: ProcessRecord): void {
  if (!isAlive(rec)) {
    throw new MeshError(
      'EDGE_MESH_NODE_START',
      `${rec.role}${rec.node ? ` of ${rec.node}` : ''} exited during start; last log lines (${rec.log}):\n${tail(rec.log)}`,
    );
  }
}

async function startService(svc: NodeService, ctx: ServiceContext, state: MeshState, signal?: AbortSignal): Promise<void> {
  const { node, plan } = ctx;
  const logFile = join(plan.stateDir, 'logs', `${node.id}.${svc.role}.log`);
  const argv = svc.argv(ctx);
  const full = node.netns ? inNetns(node.netns, argv) : argv;
  const rec = startDetached(svc.role, node.id, full, logFile, { ...baseEnv(), ...svc.env(ctx) });
  state.processes.push(rec);
  writeState(state);
  await waitFor(
    `${svc.role} of ${node.id}`,
    () => svc.ready(ctx),
    ctx.cfg.readyTimeoutMs,
    () => {
      if (signal?.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted`);
      assertAlive(rec);
    },
  );
}

/**
 * Each node learns its own location (set by the loader; without data, where generated data would
 * put it) and every peer at the address its links
 * name it by: the peer's own function URL (the node's namespace redirects it to the link's proxy),
 * or the proxy's URL in loopback mode.
 */
export async function fillRegistries(plan: MeshPlan, secret: string, state: MeshState, loaded = true): Promise<void> {
  await pool(plan.nodes, 4, async (node) => {
    let own = await ownNode(node.functionUrl, secret);
    if (!own && !loaded) {
      // a mesh started without data (loadData: false): the node stands where generated data would put it
      await addOwnNode(node.functionUrl, secret, { id: node.id, address: node.functionUrl, ...generatedLocation(node.index) });
      own = await ownNode(node.functionUrl, secret);
    }
    if (!own) throw new MeshError('EDGE_MESH_DATA', `${node.id} has no own node in its registry after loading; the loader's --set-own-location did not take`);
    state.coords[String(node.index)] = { lat: own.lat, lon: own.lon };
  });
  writeState(state);
  await pool(plan.nodes, REGISTRY_CONCURRENCY, async (node) => {
    const peers = plan.links
      .filter((x) => x.from === node.index)
      .map((l) => {
        const peer = plan.nodes[l.to - 1]!;
        const c = state.coords[String(peer.index)]!;
        return { id: peer.id, address: l.url, lat: c.lat, lon: c.lon };
      });
    await upsertPeers(node.functionUrl, secret, peers);
  });
}

export function writeTopology(plan: MeshPlan, topology: Topology): void {
  const text = JSON.stringify(topology, null, 2);
  writeFileSync(join(plan.stateDir, 'topology.json'), text);
  // the newest mesh's topology also at the well-known place
  writeFileSync(join(plan.stateDir, '..', 'topology.json'), text);
}

/**
 * Removes a mesh: stops its processes, deletes its namespaces and interfaces (by name, also the
 * ones a crashed start left without state), its data and state. Logs stay. Idempotent.
 */
export async function down(stateRoot: string, name: string, progress: Progress = () => undefined): Promise<{ stopped: number; netns: number; links: number }> {
  const stateDir = join(stateRoot, name);
  const state = readState(stateDir);
  let stopped = 0;
  if (state?.runtime === 'faasd') stopped += await stopFaasdNodes(state, progress);
  if (state) {
    const live = state.processes.filter(isAlive);
    if (live.length > 0) progress(`stopping ${live.length} processes`);
    await Promise.all(
      live.map(async (p) => {
        await stopProcess(p);
        stopped++;
      }),
    );
  }
  let removed = { netns: [] as string[], links: [] as string[] };
  if (process.getuid?.() === 0) {
    removed = await removeMeshNetwork(name);
    if (removed.netns.length + removed.links.length > 0) progress(`removed ${removed.netns.length} namespaces, ${removed.links.length} interfaces`);
  }
  if (existsSync(stateDir)) {
    for (const entry of readdirSync(stateDir)) {
      if (entry !== 'logs') rmSync(join(stateDir, entry), { recursive: true, force: true });
    }
  }
  const wellKnown = join(stateRoot, 'topology.json');
  try {
    if ((JSON.parse(readFileSync(wellKnown, 'utf8')) as Topology).mesh === name) rmSync(wellKnown, { force: true });
  } catch (err) {
    squashError(err); // no topology.json, or another mesh's
  }
  return { stopped, netns: removed.netns.length, links: removed.links.length };
}

export function requireState(stateRoot: string, name: string): MeshState {
  const state = readState(join(stateRoot, name));
  if (!state) throw new MeshError('EDGE_MESH_NOT_UP', `mesh '${name}' is not up (no state in ${join(stateRoot, name)}); run make mesh-up first`);
  return state;
}

function nodeOf(state: MeshState, ref: string): NodePlan {
  const idx = parseNodeRef(ref);
  const node = idx === undefined ? undefined : state.plan.nodes[idx - 1];
  if (!node) throw new MeshError('EDGE_MESH_UNKNOWN_NODE', `'${ref}' is not a node of mesh '${state.name}' (node-1..node-${state.plan.nodes.length})`);
  return node;
}

/**
 * Cuts a node off: its links in both directions, the functions' and the agents', hold data
 * forever (toxiproxy timeout toxics), and, when isolated, its interface drops every packet
 * (iptables in its namespace), so connections to it hang instead of being refused.
 */
export async function cut(stateRoot: string, name: string, ref: string): Promise<NodePlan> {
  const state = requireState(stateRoot, name);
  const node = nodeOf(state, ref);
  // recorded first: a restore of a neighbour running meanwhile then leaves the shared links cut
  if (!state.cut.includes(node.id)) state.cut.push(node.id);
  writeState(state);
  const toxi = new ToxiproxyClient(state.plan.toxiproxyApi.host, state.plan.toxiproxyApi.port);
  await toxi.cutLinks(linkProxies(state.plan).filter((l) => l.from === node.index || l.to === node.index));
  if (node.netns) await cutNodeFirewall(node);
  return node;
}

/**
 * Reconnects a cut node. A link to a node that is still cut stays cut (two neighbours cut at
 * once share their link; restoring one must not reconnect the other).
 */
export async function restore(stateRoot: string, name: string, ref: string): Promise<NodePlan> {
  const state = requireState(stateRoot, name);
  const node = nodeOf(state, ref);
  // unrecorded first (in the same synchronous step as the read), so that of two neighbours
  // restored at once, the later one reconnects their shared link
  state.cut = state.cut.filter((id) => id !== node.id);
  writeState(state);
  const stillCut = new Set(state.plan.nodes.filter((n) => state.cut.includes(n.id)).map((n) => n.index));
  if (node.netns) await restoreNodeFirewall(node);
  const toxi = new ToxiproxyClient(state.plan.toxiproxyApi.host, state.plan.toxiproxyApi.port);
  await toxi.restoreLinks(
    linkProxies(state.plan).filter((l) => (l.from === node.index && !stillCut.has(l.to)) || (l.to === node.index && !stillCut.has(l.from))),
  );
  return node;
}

export interface ProcessStatus {
  role: string;
  pid: number;
  alive: boolean;
  rssBytes: number | null;
  pssBytes: number | null;
}

export interface NodeStatusReport {
  id: string;
  addr: string;
  functionUrl: string;
  ready: boolean;
  cut: boolean;
  rssBytes: number;
  pssBytes: number;
  processes: ProcessStatus[];
}

export interface StatusReport {
  mesh: string;
  phase: string;
  isolation: string;
  latency: string;
  toxiproxy: ProcessStatus | null;
  nodes: NodeStatusReport[];
  totalRssBytes: number;
  totalPssBytes: number;
}

/** A faasd node's services (containers and the supervisor group) as status rows: PSS/RSS summed over each one's processes. */
function faasdProcesses(n: NodePlan): ProcessStatus[] {
  return faasdNodeMemory(n).map((m) => ({ role: m.service, pid: m.pids[0] ?? 0, alive: m.pids.length > 0, rssBytes: m.rssBytes, pssBytes: m.pssBytes }));
}

export async function status(stateRoot: string, name: string): Promise<StatusReport> {
  const state = requireState(stateRoot, name);
  const proc = (p: ProcessRecord): ProcessStatus => {
    const alive = isAlive(p);
    return { role: p.role, pid: p.pid, alive, rssBytes: alive ? rssBytes(p.pid) : null, pssBytes: alive ? pssBytes(p.pid) : null };
  };
  const tp = state.processes.find((p) => p.role === 'toxiproxy');
  const nodes = await Promise.all(
    state.plan.nodes.map(async (n) => {
      const processes = state.runtime === 'faasd' ? faasdProcesses(n) : state.processes.filter((p) => p.node === n.id).map(proc);
      return {
        id: n.id,
        addr: n.addr,
        functionUrl: n.functionUrl,
        ready: await httpOk(state.runtime === 'faasd' ? `${n.functionUrl}/readyz` : `http://${n.addr}:${n.functionPort}/readyz`, 1_000),
        cut: state.cut.includes(n.id),
        rssBytes: processes.reduce((s, p) => s + (p.rssBytes ?? 0), 0),
        pssBytes: processes.reduce((s, p) => s + (p.pssBytes ?? 0), 0),
        processes,
      };
    }),
  );
  const toxiproxy = tp ? proc(tp) : null;
  return {
    mesh: state.name,
    phase: state.phase,
    isolation: state.plan.isolation,
    latency: state.latency,
    toxiproxy,
    nodes,
    totalRssBytes: nodes.reduce((s, n) => s + n.rssBytes, 0) + (toxiproxy?.rssBytes ?? 0),
    totalPssBytes: nodes.reduce((s, n) => s + n.pssBytes, 0) + (toxiproxy?.pssBytes ?? 0),
  };
}

/**
 * Restarts every node's function with another forwarding mode (the benchmark compares them on
 * the same mesh and data). Other services keep running.
 */
export async function restartFunctions(cfg: MeshConfig, forwardMode: 'parallel' | 'sequential', progress: Progress = () => undefined): Promise<void> {
  const state = requireState(cfg.stateRoot, cfg.name);
  const secretFile = join(state.plan.stateDir, 'secret');
  progress(`restarting ${state.plan.nodes.length} functions with SYNCMESH_FORWARD_MODE=${forwardMode}`);
  const old = state.processes.filter((p) => p.node !== null && p.role === functionService.role);
  await Promise.all(old.map((p) => stopProcess(p)));
  state.processes = state.processes.filter((p) => !old.includes(p));
  state.forwardMode = forwardMode;
  writeState(state);
  await pool(state.plan.nodes, cfg.startConcurrency, async (node) => {
    const ctx: ServiceContext = { cfg, plan: state.plan, node, secretFile, forwardMode };
    await startService(functionService, ctx, state);
  });
  writeTopology(state.plan, buildTopology(state));
}

/** The recorded process of one role (mongo, function, listener, agent) of a node, the newest first. */
export function nodeProcess(stateRoot: string, name: string, ref: string, role: string): ProcessRecord | undefined {
  const state = requireState(stateRoot, name);
  const node = nodeOf(state, ref);
  return state.processes.filter((p) => p.node === node.id && p.role === role).pop();
}

/**
 * Starts one process of a node again, with the configuration of the mesh (after it died, was
 * killed or stopped: the chaos test), records it and waits until it is ready. A live process of
 * that role is stopped first. Records of the old process are dropped from the state.
 */
export async function startNodeService(cfg: MeshConfig, ref: string, role: string, signal?: AbortSignal): Promise<ProcessRecord> {
  const svc = [...DATABASE_SERVICES, ...NODE_SERVICES].find((s) => s.role === role);
  if (!svc) throw new MeshError('EDGE_MESH_CONFIG', `no node service '${role}' (${[...DATABASE_SERVICES, ...NODE_SERVICES].map((s) => s.role).join(', ')})`);
  const before = requireState(cfg.stateRoot, cfg.name);
  const node = nodeOf(before, ref);
  const old = before.processes.filter((p) => p.node === node.id && p.role === role);
  await Promise.all(old.map((p) => stopProcess(p)));
  // re-read after the await, and change the state in one synchronous step (startService writes it)
  const state = requireState(cfg.stateRoot, cfg.name);
  state.processes = state.processes.filter((p) => !(p.node === node.id && p.role === role));
  const ctx: ServiceContext = { cfg, plan: state.plan, node, secretFile: join(state.plan.stateDir, 'secret'), forwardMode: state.forwardMode };
  await startService(svc, ctx, state, signal);
  return nodeProcess(cfg.stateRoot, cfg.name, ref, role)!;
}
