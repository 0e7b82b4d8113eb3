/**
 * The lifecycle every runtime shares: plan, preflight, the state folder and secrets, the bridge,
 * toxiproxy and its links, the registries, the link profile, the topology, and the teardown.
 * What runs on a node comes from a Runtime (runtime.ts), passed in: this module imports no
 * runtime, so process.ts and faasd.ts both build on it without a cycle.
 *
 * Order of `startMesh` (every step records itself in the state file first, so `removeMesh` can
 * undo any prefix of it): preflight (changes nothing) -> bridge -> toxiproxy with one proxy per
 * directed pair (and one more per pair for the agents' links) -> per node (a few at a time):
 * namespace (with the redirects of its peers' addresses to its links), database, data, services
 * -> registries -> link profile -> topology.json.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatedLocation } from '@syncmesh-edge/syncmesh-fn/load';
import {
  hostListeners,
  httpOk,
  isAlive,
  pool,
  portTaken,
  pssBytes,
  rssBytes,
  startDetached,
  stopProcess,
  tail,
  waitFor,
  type ProcessRecord,
} from '@syncmesh-edge/lab';
import { addOwnNode, ownNode, upsertPeers } from '../client/client.js';
import type { MeshConfig } from '../config.js';
import { MeshError, squashError } from '../errors.js';
import { moduleLogger } from '../log.js';
import { linkShapes, validateProfile } from '../network/latency.js';
import { createMeshBridge, createNodeNetwork, preflightNetwork, removeMeshNetwork } from '../network/network.js';
import { ToxiproxyClient } from '../network/toxiproxy.js';
import { hostPorts, linkProxies, planMesh, type MeshPlan, type NodePlan } from '../plan/plan.js';
import { readState, writeState, type MeshState } from '../plan/state.js';
import { buildTopology, type Topology } from '../plan/topology.js';
import { loadNodeData } from './load.js';
import type { MeshHandle, Progress, ProcessStatus, Runtime, UpOptions } from './runtime.js';
import { writeKeyFileFor } from './services.js';

const log = moduleLogger('mesh');
/** Nodes whose registries are filled at once (each gets N-1 signed addNode requests). */
const REGISTRY_CONCURRENCY = 8;

/** Minimal environment for node processes: nothing of ours leaks into them. */
export function baseEnv(): Record<string, string> {
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

/** Everything a start checks before it changes anything (the runtime's own checks come first). */
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

/** Brings a mesh up on `runtime`. On any failure or abort, removes everything it created and rethrows. */
export async function startMesh(runtime: Runtime, cfg: MeshConfig, opts: UpOptions = {}): Promise<MeshHandle> {
  const progress = opts.progress ?? (() => undefined);
  const plan = planFor(cfg);
  await runtime.preflight(cfg, plan);
  await preflight(cfg, plan, opts);

  const { secret, secretFile, state } = beginMesh(cfg, plan, runtime.name === 'faasd' ? 'faasd' : undefined);
  const t0 = performance.now();
  const aborted = () => {
    if (opts.signal?.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted`);
  };
  const seconds = (since: number, until = performance.now()) => ((until - since) / 1000).toFixed(1);

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
      mkdirSync(node.dir, { recursive: true });
      if (plan.isolation === 'netns') await createNodeNetwork(plan, node);
      const ctx = { cfg, plan, node, state, secretFile, ...(opts.signal ? { signal: opts.signal } : {}) };
      await runtime.startDatabase(ctx);
      const tDatabase = performance.now();
      let loaded = '';
      if (opts.loadData !== false) loaded = `, ${await loadNodeData(cfg, node, csvFor(cfg, node))} readings`;
      await runtime.startServices(ctx);
      started++;
      const times = runtime.databasePhase ? `${runtime.databasePhase} ${seconds(t, tDatabase)} s, total ${seconds(t)} s` : `${seconds(t)} s`;
      progress(`${node.id} ready at ${runtime.servingAt(node)} (${times}${loaded}) [${started}/${plan.nodes.length}]`);
    });
    aborted();

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
    progress(`${runtime.label} '${plan.name}' up: ${plan.nodes.length} nodes in ${seconds(t0)} s; topology in ${join(plan.stateDir, 'topology.json')}`);
    return { plan, topology, secret };
  } catch (err) {
    state.phase = 'failed';
    writeState(state);
    log.info({ err }, `${runtime.label} start failed; removing what was created`);
    progress(opts.signal?.aborted ? 'interrupted; removing what was created' : 'start failed; removing what was created');
    await removeMesh(runtime, cfg.stateRoot, plan.name, progress);
    throw opts.signal?.aborted
      ? new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted; everything it created was removed`, { cause: err })
      : err;
  }
}

async function startToxiproxy(cfg: MeshConfig, plan: MeshPlan, state: MeshState): Promise<ToxiproxyClient> {
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

/** Throws EDGE_MESH_NODE_START with the last lines of its log when a process being started has exited. */
export function assertAlive(rec: ProcessRecord): void {
  if (!isAlive(rec)) {
    throw new MeshError(
      'EDGE_MESH_NODE_START',
      `${rec.role}${rec.node ? ` of ${rec.node}` : ''} exited during start; last log lines (${rec.log}):\n${tail(rec.log)}`,
    );
  }
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
 * Removes a mesh: the runtime stops its nodes, then its recorded processes are stopped, its
 * namespaces and interfaces deleted (by name, also the ones a crashed start left without state),
 * its data and state removed. Logs stay. Idempotent.
 */
export async function removeMesh(
  runtime: Runtime,
  stateRoot: string,
  name: string,
  progress: Progress = () => undefined,
): Promise<{ stopped: number; netns: number; links: number }> {
  const stateDir = join(stateRoot, name);
  const state = readState(stateDir);
  let stopped = 0;
  if (state) {
    stopped += await runtime.stopNodes(state, progress);
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

/** A recorded process as a status row (memory only while it runs). */
export function processStatus(p: ProcessRecord): ProcessStatus {
  const alive = isAlive(p);
  return { role: p.role, pid: p.pid, alive, rssBytes: alive ? rssBytes(p.pid) : null, pssBytes: alive ? pssBytes(p.pid) : null };
}
