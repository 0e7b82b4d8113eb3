/**
 * The baseline: one central MongoDB-compatible server in its own namespace on the mesh's bridge,
 * with the Syncmesh function in front of it answering alone (no forwarding), so that k6 sends
 * the same requests to both systems. Every node replays its readings into it over its own
 * emulated link (the ingest the paper counted), and the client reaches it over another.
 *
 * Where the central server stands: at the centroid of the nodes, reached with the mesh's
 * regional model (5 ms + 0.1 ms/km one way, 1 ms jitter; `site`: 1 ms; `none`: 0). The client
 * stands at node-1 (its link to node-1 is local), so in the baseline it crosses one emulated
 * link to the central server, and in Syncmesh the entry node crosses one to each peer.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Coordinates, type MeshConfig, regionalLatency, type Topology } from '@syncmesh-edge/mesh';
import { testServerCommand } from '@syncmesh-edge/mongo-test-server';
import type { Profile, ScenarioConfig } from './config.js';
import { ScenarioError } from './errors.js';
import { moduleLogger } from './log.js';
import {
  httpOk,
  latencyToxics,
  pool,
  startService,
  tail,
  tcpOpen,
  Toxiproxy,
  waitFor,
  type Service,
  createExtraNamespace,
  extraNamespace,
  inNetns,
  removeNamespace,
  runInNetns,
  type ExtraNamespace,
} from '@syncmesh-edge/lab';

const log = moduleLogger('central');

/** The site profile's one-way latency to the central server (regional: the mesh's regionalLatency). */
export const SITE_LATENCY_MS = 1;
export const CENTRAL_MONGO_PORT = 27017;
export const CENTRAL_FUNCTION_PORT = 8080;
export const FUNCTION_PATH = '/function/syncmesh-fn';
/** Host ports of the central server's emulated links (the mesh's proxies use 20101-23030). */
export const INGEST_PROXY_PORT_BASE = 24000;
export const CLIENT_PROXY_PORT = 24900;
const READY_TIMEOUT_MS = 90_000;
/** Loading one sensor-month takes seconds; allow for 2 shared cores. */
const INGEST_TIMEOUT_MS = 600_000;
/** Loaders running at once (2 cores; the central server is the bottleneck anyway). */
const INGEST_CONCURRENCY = 2;

export function centroid(points: readonly Coordinates[]): Coordinates {
  const n = Math.max(1, points.length);
  return { lat: points.reduce((s, p) => s + p.lat, 0) / n, lon: points.reduce((s, p) => s + p.lon, 0) / n };
}

/** One-way latency between two places under a profile (the mesh's model). */
export function centralShape(profile: Profile, a: Coordinates | null, b: Coordinates | null): { latencyMs: number; jitterMs: number } {
  switch (profile) {
    case 'none':
      return { latencyMs: 0, jitterMs: 0 };
    case 'site':
      return { latencyMs: SITE_LATENCY_MS, jitterMs: 0 };
    case 'regional':
      if (!a || !b) throw new ScenarioError('EDGE_SCENARIO_CONFIG', 'the regional profile needs every node location; the mesh topology has none');
      return regionalLatency(a, b);
  }
}

export interface IngestResult {
  readings: number;
  per_node: { node: string; readings: number; ms: number }[];
  ms: number;
}

export interface Central {
  readonly ns: ExtraNamespace;
  /** URL the client uses (through the emulated client link). */
  readonly clientUrl: string;
  readonly services: readonly Service[];
  /** Host proxy port -> node id (ingest links). */
  readonly ingestPorts: ReadonlyMap<number, string>;
  readonly clientLatencyMs: number;
  readonly location: Coordinates | null;
  /** Replays every node's readings into the central server, each from its node's namespace. */
  ingest(): Promise<IngestResult>;
  stop(): Promise<void>;
}

function located(t: Topology): Coordinates[] | null {
  return t.nodes.every((n) => n.lat !== null && n.lon !== null) ? t.nodes.map((n) => ({ lat: n.lat!, lon: n.lon! })) : null;
}

/**
 * Starts a fresh (empty, in-memory) central server for the first `nodes` nodes of the mesh: its
 * location is their centroid, and one ingest link per node is created.
 */
export async function startCentral(cfg: ScenarioConfig, meshTopology: Topology, nodes: number, logDir: string, meshCfg: MeshConfig): Promise<Central> {
  const { loadCli, functionMain } = meshCfg;
  const topology: Topology = { ...meshTopology, nodes: meshTopology.nodes.slice(0, nodes) };
  if (!topology.subnet) throw new ScenarioError('EDGE_SCENARIO_CONFIG', 'the baseline needs a namespace mesh (run as root)');
  const bridge = `${topology.mesh}-br`;
  const ns = extraNamespace(topology.mesh, topology.subnet, 'db');
  const coords = located(topology);
  const location = coords ? centroid(coords) : null;
  const toxi = new Toxiproxy(topology.toxiproxy_api);
  const services: Service[] = [];
  const proxies: string[] = [];
  const dataDir = join(logDir, '..', `central-db-n${nodes}`);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const stop = async () => {
    await Promise.all(services.map((s) => s.stop()));
    for (const p of proxies) await toxi.removeProxy(p);
    await removeNamespace(ns);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await createExtraNamespace(ns, bridge);
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...(process.env['JAVA_HOME'] ? { JAVA_HOME: process.env['JAVA_HOME'] } : {}) };
    const mongo = startService(
      'central-mongo',
      // the same storage as the nodes' servers (disk: H2 MVStore) and their heap per node
      inNetns(
        ns.netns,
        testServerCommand({
          bind: '0.0.0.0',
          port: CENTRAL_MONGO_PORT,
          heapMb: cfg.centralHeapMb ?? meshCfg.mongoHeapMb * nodes,
          ...(meshCfg.mongoStorage === 'disk' ? { dataDir } : {}),
        }),
      ),
      join(logDir, 'central.mongo.log'),
      env,
    );
    services.push(mongo);
    await waitFor(
      'central MongoDB',
      () => tcpOpen(ns.addr, CENTRAL_MONGO_PORT),
      READY_TIMEOUT_MS,
      () => assertRunning(mongo),
    );
    const fn = startService('central-function', inNetns(ns.netns, [process.execPath, functionMain]), join(logDir, 'central.function.log'), {
      ...env,
      PORT: String(CENTRAL_FUNCTION_PORT),
      HOST: '0.0.0.0',
      MONGODB_URI: `mongodb://127.0.0.1:${CENTRAL_MONGO_PORT}/?directConnection=true`,
      SYNCMESH_NODE_ID: 'central',
      SYNCMESH_MESH_SECRET_FILE: join(logDir, 'no-mesh-secret'),
      LOG_LEVEL: 'warn',
    });
    services.push(fn);
    await waitFor(
      'central function',
      () => httpOk(`http://${ns.addr}:${CENTRAL_FUNCTION_PORT}/readyz`),
      READY_TIMEOUT_MS,
      () => assertRunning(fn),
    );

    const client = topology.nodes[0];
    const clientShape = centralShape(cfg.latency, client && client.lat !== null ? { lat: client.lat, lon: client.lon! } : null, location);
    const clientProxy = { name: 'client>central', listen: `${topology.host_address}:${CLIENT_PROXY_PORT}`, upstream: `${ns.addr}:${CENTRAL_FUNCTION_PORT}` };
    await toxi.createProxy(clientProxy, latencyToxics(clientShape.latencyMs, clientShape.jitterMs));
    proxies.push(clientProxy.name);
    const ingestPorts = new Map<number, string>();
    for (const [i, n] of topology.nodes.entries()) {
      const port = INGEST_PROXY_PORT_BASE + i + 1;
      const shape = centralShape(cfg.latency, n.lat !== null ? { lat: n.lat, lon: n.lon! } : null, location);
      const name = `${n.id}>central`;
      await toxi.createProxy(
        { name, listen: `${topology.host_address}:${port}`, upstream: `${ns.addr}:${CENTRAL_MONGO_PORT}` },
        latencyToxics(shape.latencyMs, shape.jitterMs),
      );
      proxies.push(name);
      ingestPorts.set(port, n.id);
    }
    log.info({ addr: ns.addr, clientLatencyMs: clientShape.latencyMs }, 'central server up');

    return {
      ns,
      clientUrl: `http://${topology.host_address}:${CLIENT_PROXY_PORT}${FUNCTION_PATH}`,
      services,
      ingestPorts,
      clientLatencyMs: clientShape.latencyMs,
      location,
      async ingest() {
        const t0 = performance.now();
        const per = await pool(topology.nodes, INGEST_CONCURRENCY, async (n, i) => {
          if (!n.namespace) throw new ScenarioError('EDGE_SCENARIO_CONFIG', `${n.id} has no namespace`);
          const t = performance.now();
          const uri = `mongodb://${topology.host_address}:${INGEST_PROXY_PORT_BASE + i + 1}/?directConnection=true`;
          const source = cfg.dataDir ? ['--file', join(cfg.dataDir, `${i + 1}.csv`)] : ['--generate', '--sensor', String(i + 1)];
          let out: string;
          try {
            out = (
              await runInNetns(n.namespace, [process.execPath, loadCli, '--mongodb-uri', uri, ...source, '--quiet'], {
                timeoutMs: INGEST_TIMEOUT_MS,
              })
            ).stdout;
          } catch (err) {
            throw new ScenarioError('EDGE_SCENARIO_INGEST', `replaying ${n.id}'s readings into the central server failed: ${(err as Error).message}`, {
              cause: err,
            });
          }
          const last = out.trim().split('\n').pop() ?? '';
          const loaded = (JSON.parse(last) as { loaded?: unknown }).loaded;
          if (typeof loaded !== 'number') throw new ScenarioError('EDGE_SCENARIO_INGEST', `the loader printed no count for ${n.id}: ${last.slice(0, 200)}`);
          return { node: n.id, readings: loaded, ms: Math.round(performance.now() - t) };
        });
        return { readings: per.reduce((s, p) => s + p.readings, 0), per_node: per, ms: Math.round(performance.now() - t0) };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function assertRunning(s: Service): void {
  if (s.exited())
    throw new ScenarioError('EDGE_SCENARIO_CENTRAL_START', `${s.role} exited during start; last log lines (${s.log}):\n${tail(s.log, 8) || '(no log)'}`);
}
