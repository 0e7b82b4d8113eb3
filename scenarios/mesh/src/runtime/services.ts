/**
 * What runs on one node: the same binaries and configuration variables as on a real appliance;
 * only the supervisor differs (here: detached processes, in the node's namespace when isolated).
 * The change-stream listener and the MISO agent add their entries to NODE_SERVICES when they land.
 */
import { dirname, join } from 'node:path';
import { testServerCommand } from '@syncmesh-edge/mongo-test-server';
import { assertDiscoveryAllowed, type MeshConfig } from '../config.js';
import { NODE_IF } from '../network/network.js';
import { MeshError } from '../errors.js';
import { nodeId, type MeshPlan, type NodePlan } from '../plan/plan.js';
import { httpOk, tcpOpen } from '@syncmesh-edge/lab';

export interface ServiceContext {
  readonly cfg: MeshConfig;
  readonly plan: MeshPlan;
  readonly node: NodePlan;
  /** File holding the mesh secret (SYNCMESH_MESH_SECRET_FILE on every node). */
  readonly secretFile: string;
  readonly forwardMode: 'parallel' | 'sequential';
}

export interface NodeService {
  /** Short role name: process logs are logs/<node>.<role>.log. */
  readonly role: string;
  /** Command line (run inside the node's namespace when isolated). */
  argv(ctx: ServiceContext): string[];
  /** Service environment (added to a minimal PATH/LANG environment). */
  env(ctx: ServiceContext): Record<string, string>;
  /** One readiness probe; polled with a deadline. */
  ready(ctx: ServiceContext): Promise<boolean>;
}

/** Bind address of node services: every address inside a namespace, loopback otherwise. */
function bindAddr(ctx: ServiceContext): string {
  return ctx.plan.isolation === 'netns' ? '0.0.0.0' : ctx.node.addr;
}

export const mongoService: NodeService = {
  role: 'mongo',
  argv: (ctx) =>
    testServerCommand({
      bind: bindAddr(ctx),
      port: ctx.node.mongoPort,
      // on disk, an acknowledged write survives kill -9, as a node's MongoDB journals it
      ...(ctx.cfg.mongoStorage === 'disk' ? { dataDir: join(ctx.node.dir, 'db'), durableWrites: true } : {}),
      heapMb: ctx.cfg.mongoHeapMb,
      ...(ctx.cfg.mongoOplogMaxEntries !== undefined ? { oplogMaxEntries: ctx.cfg.mongoOplogMaxEntries } : {}),
      ...(ctx.cfg.mongoOplogMaxAgeS !== undefined ? { oplogMaxAgeSeconds: ctx.cfg.mongoOplogMaxAgeS } : {}),
    }),
  env: () => ({ ...LEAN_ENV }),
  ready: (ctx) => tcpOpen(ctx.node.addr, ctx.node.mongoPort),
};

/**
 * Every other node's agent as a static MISO peer, its id pinned (`id@host:port`): a peer
 * answering with another id is refused. The address is the peer agent's own (the node's
 * namespace redirects it to the agent link's proxy; loopback mode: the proxy itself), so agent
 * traffic gets the link profile and the cuts of the pair, as the functions' does.
 */
export function misoPeers(plan: MeshPlan, node: NodePlan): string {
  // a single node has no peers, so no links (bench-function RUNTIME=faasd runs one)
  if (plan.agentLinks.length === 0 && plan.nodes.length > 1) {
    throw new MeshError(
      'EDGE_MESH_CONFIG',
      `mesh '${plan.name}' was planned without agent links, which static MISO peers go through (planFor plans them when agents run with static discovery)`,
    );
  }
  return plan.agentLinks
    .filter((l) => l.from === node.index)
    .map((l) => `${nodeId(l.to)}@${l.address}`)
    .join(',');
}

/** The write key (clients' `Authorization: Bearer <key>` for data writes) lives next to the mesh secret. */
export function writeKeyFileFor(secretFile: string): string {
  return join(dirname(secretFile), 'write-key');
}

export const functionService: NodeService = {
  role: 'function',
  argv: (ctx) => [process.execPath, ...replicationNodeFlags(ctx), ctx.cfg.functionMain],
  env: (ctx) => ({
    ...LEAN_ENV,
    PORT: String(ctx.node.functionPort),
    HOST: bindAddr(ctx),
    MONGODB_URI: ctx.node.localMongoUri,
    SYNCMESH_NODE_ID: ctx.node.id,
    SYNCMESH_MESH_SECRET_FILE: ctx.secretFile,
    SYNCMESH_WRITE_KEY_FILE: writeKeyFileFor(ctx.secretFile),
    SYNCMESH_NODE_TIMEOUT_MS: String(ctx.cfg.nodeTimeoutMs),
    SYNCMESH_DEADLINE_MS: String(ctx.cfg.deadlineMs),
    SYNCMESH_FORWARD_MODE: ctx.forwardMode,
    LOG_LEVEL: ctx.cfg.nodeLogLevel,
    ...(ctx.cfg.replayWindowMs !== undefined ? { SYNCMESH_REPLAY_WINDOW_MS: String(ctx.cfg.replayWindowMs) } : {}),
    ...(ctx.cfg.requestDeadlineMs !== undefined ? { SYNCMESH_REQUEST_DEADLINE_MS: String(ctx.cfg.requestDeadlineMs) } : {}),
  }),
  ready: (ctx) => httpOk(`http://${ctx.node.addr}:${ctx.node.functionPort}/readyz`),
};

/**
 * Memory settings for every Node.js process of a node: a 1 MB young generation and two malloc
 * arenas keep each one near 60-75 MB RSS (measured in the agent's benchmark).
 */
const LEAN_NODE_FLAGS = ['--max-semi-space-size=1'];
const LEAN_ENV = { MALLOC_ARENA_MAX: '2' };

/**
 * The function and the listener carry every replicated reading (EJSON bodies parsed, BSON
 * encoded per subscriber): with a 1 MB young generation, garbage collection was the top item of
 * their profiles (19-23 % of their CPU). They get `MESH_REPLICATION_SEMI_SPACE_MB` (default 8,
 * as `NODE_OPTIONS` in images/node/node.yml); the agent keeps 1 MB.
 */
function replicationNodeFlags(ctx: ServiceContext): string[] {
  return [`--max-semi-space-size=${ctx.cfg.replicationSemiSpaceMb}`];
}

/** The node's own function URL, as the listener reaches it (inside the namespace: loopback). */
function localFunctionUrl(ctx: ServiceContext): string {
  const host = ctx.plan.isolation === 'netns' ? '127.0.0.1' : ctx.node.addr;
  return `http://${host}:${ctx.node.functionPort}/function/syncmesh-fn`;
}

export const listenerService: NodeService = {
  role: 'listener',
  argv: (ctx) => [process.execPath, ...replicationNodeFlags(ctx), ctx.cfg.listenerMain],
  env: (ctx) => ({
    ...LEAN_ENV,
    MONGODB_URI: ctx.node.localMongoUri,
    LISTENER_DATABASE: 'syncmesh',
    LISTENER_COLLECTIONS: 'sensor_data',
    LISTENER_NODE_ID: ctx.node.id,
    SYNCMESH_FUNCTION_URL: localFunctionUrl(ctx),
    SYNCMESH_MESH_SECRET_FILE: ctx.secretFile,
    LISTENER_HEALTH_ADDR: `${bindAddr(ctx)}:${ctx.node.listenerPort}`,
    LOG_LEVEL: ctx.cfg.nodeLogLevel,
  }),
  ready: (ctx) => httpOk(`http://${ctx.node.addr}:${ctx.node.listenerPort}/readyz`),
};

export const agentService: NodeService = {
  role: 'agent',
  argv: (ctx) => [process.execPath, ...LEAN_NODE_FLAGS, ctx.cfg.agentMain],
  env: (ctx) => ({
    ...LEAN_ENV,
    MISO_NODE_ID: ctx.node.id,
    MISO_GRPC_ADDR: `${bindAddr(ctx)}:${ctx.node.agentPort}`,
    MISO_ADVERTISE_ADDR: `${ctx.node.addr}:${ctx.node.agentPort}`,
    MISO_SDK_SOCKET: join(ctx.node.dir, 'miso.sock'),
    ...agentDiscoveryEnv(ctx),
    MISO_MESH_SECRET_FILE: ctx.secretFile,
    ...(ctx.cfg.misoPersistDelayMs !== undefined ? { MISO_PERSIST_DELAY_MS: String(ctx.cfg.misoPersistDelayMs) } : {}),
    ...(ctx.cfg.misoDebounceMs !== undefined ? { MISO_DEBOUNCE_MS: String(ctx.cfg.misoDebounceMs) } : {}),
    MONGODB_URI: ctx.node.localMongoUri,
    LOG_LEVEL: ctx.cfg.nodeLogLevel,
  }),
  ready: (ctx) => tcpOpen(ctx.node.addr, ctx.node.agentPort),
};

/**
 * static: every other node's agent as a static peer, at its own address, which the node's
 * namespace redirects to the agent link's proxy (agents dial back, so the full list is harmless;
 * a peer pinned here is never dialled back at another address, and a dial-back at an advertised
 * address is redirected as well). mdns: no list; the agent announces itself and browses on the namespace's eth0, and
 * dials what it finds directly: mDNS links bypass the link emulation.
 */
function agentDiscoveryEnv(ctx: ServiceContext): Record<string, string> {
  assertDiscoveryAllowed(ctx.plan.isolation, ctx.cfg.misoDiscovery);
  if (ctx.cfg.misoDiscovery === 'mdns') return { MISO_MDNS: 'on', MISO_MDNS_INTERFACE: NODE_IF };
  return {
    MISO_PEERS: misoPeers(ctx.plan, ctx.node),
  };
}

const BY_ROLE: Record<string, NodeService> = { function: functionService, listener: listenerService, agent: agentService };

/** Started in this order on every node; data is loaded between MongoDB and the function. */
export const DATABASE_SERVICES: readonly NodeService[] = [mongoService];
export const NODE_SERVICES: readonly NodeService[] = [functionService, listenerService, agentService];

/** The node processes this configuration runs, in start order. */
export function nodeServices(cfg: MeshConfig): NodeService[] {
  return cfg.services.map((role) => BY_ROLE[role]!);
}
