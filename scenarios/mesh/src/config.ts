/**
 * All configuration of the emulated mesh, read once from the environment, validated and frozen.
 * Every variable, its default and its meaning is listed in ../README.md.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { MeshError } from './errors.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Package root, both from src/ and from dist/src/. */
export const PACKAGE_ROOT = existsSync(join(here, '..', 'package.json')) ? resolve(here, '..') : resolve(here, '..', '..');
/** Repository root (scenarios/mesh/..). */
export const REPO_ROOT = resolve(PACKAGE_ROOT, '..', '..');

export const MAX_NODES = 30;
export const DEFAULT_MESH_NAME = 'sme0';
export const DEFAULT_NODES = 3;
/** Heap of each node's test server; one sensor-month (~18k readings) fits in well under this. */
export const DEFAULT_MONGO_HEAP_MB = 128; // own readings, replicas of subscribed nodes and the oplog of both (the test server keeps all in the heap)
export const DEFAULT_NODE_TIMEOUT_MS = 5_000; // one peer may take this long (SYNCMESH_NODE_TIMEOUT_MS)
export const DEFAULT_DEADLINE_MS = 15_000; // the whole fan-out (SYNCMESH_DEADLINE_MS)
export const DEFAULT_READY_TIMEOUT_MS = 90_000; // one process must be ready within this
export const DEFAULT_START_CONCURRENCY = 3; // nodes started at once (2 cores)
/** The function's and the listener's young generation, as in images/node/node.yml (docs/benchmarks/replication.md). */
export const DEFAULT_REPLICATION_SEMI_SPACE_MB = 8;
export const DEFAULT_FUNCTION_PORT = 8080; // as on a real node behind the faasd gateway
export const DEFAULT_MONGO_PORT = 27017;
export const DEFAULT_AGENT_PORT = 7070;
export const DEFAULT_LISTENER_HEALTH_PORT = 8091; // the listener's /readyz inside a node namespace
/**
 * Loopback mode: ports used by one mesh, from its base (plan/plan.ts): node services below base+1000,
 * the function links from base+1000, the agent links from base+2000 (each 32·from+to, 30 nodes).
 */
export const LOOPBACK_PORT_SPAN = 3000;
/** Loopback mode: the highest MESH_PORT_BASE whose range still ends below port 65536. */
export const MAX_LOOPBACK_PORT_BASE = 65536 - LOOPBACK_PORT_SPAN;
/** Processes of a node besides its database, in start order. */
export const NODE_ROLES = ['function', 'listener', 'agent'] as const;
/** How the MISO agents find each other: the static list (MISO_PEERS) or mDNS on the node's interface. */
export const MISO_DISCOVERY_MODES = ['static', 'mdns'] as const;
export type MisoDiscovery = (typeof MISO_DISCOVERY_MODES)[number];

const envSchema = z.object({
  MESH_NAME: z
    .string()
    .regex(/^[a-z][a-z0-9]{1,7}$/, 'a lowercase letter, then 1-7 lowercase letters or digits (it prefixes every interface name, max 15 chars)')
    .default(DEFAULT_MESH_NAME),
  MESH_NODES: z.coerce.number().int().min(1).max(MAX_NODES).default(DEFAULT_NODES),
  MESH_LATENCY: z.string().min(1).default('none'),
  MESH_DATA: z.string().optional(),
  MESH_STATE_DIR: z.string().min(1).default(join(REPO_ROOT, '.mesh')),
  MESH_ISOLATION: z.enum(['auto', 'netns', 'loopback']).default('auto'),
  MESH_RUNTIME: z.enum(['process', 'faasd']).default('process'),
  MESH_SUBNET: z
    .string()
    .regex(/^10\.\d{1,3}\.\d{1,3}\.0\/24$/, 'a /24 inside 10.0.0.0/8, e.g. 10.77.3.0/24')
    .optional(),
  MESH_PORT_BASE: z.coerce.number().int().min(1024).max(MAX_LOOPBACK_PORT_BASE).optional(),
  SYNCMESH_MESH_SECRET: z.string().min(32, 'at least 32 bytes (openssl rand -hex 32)').optional(),
  MESH_NODE_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_NODE_TIMEOUT_MS),
  MESH_DEADLINE_MS: z.coerce.number().int().positive().default(DEFAULT_DEADLINE_MS),
  MESH_FORWARD_MODE: z.enum(['parallel', 'sequential']).default('parallel'),
  MESH_REPLAY_WINDOW_MS: z.coerce.number().int().positive().optional(),
  MESH_MONGO_STORAGE: z.enum(['disk', 'memory']).default('memory'),
  MESH_MONGO_HEAP_MB: z.coerce.number().int().min(32).max(4096).default(DEFAULT_MONGO_HEAP_MB),
  MESH_MONGO_OPLOG_MAX_ENTRIES: z.coerce.number().int().positive().optional(),
  MESH_MONGO_OPLOG_MAX_AGE_S: z.coerce.number().int().positive().optional(),
  MESH_READY_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_READY_TIMEOUT_MS),
  MESH_START_CONCURRENCY: z.coerce.number().int().min(1).max(MAX_NODES).default(DEFAULT_START_CONCURRENCY),
  MESH_FUNCTION_MAIN: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, 'functions', 'syncmesh', 'dist', 'src', 'main.js')),
  MESH_LOAD_CLI: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, 'functions', 'syncmesh', 'dist', 'src', 'load', 'cli.js')),
  MESH_LISTENER_MAIN: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, 'listeners', 'dist', 'src', 'main.js')),
  MESH_AGENT_MAIN: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, 'miso-agent', 'dist', 'src', 'main.js')),
  MESH_SERVICES: z
    .string()
    .default(NODE_ROLES.join(','))
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(NODE_ROLES)).refine((r) => r.includes('function'), 'must include function')),
  MESH_MISO_DISCOVERY: z.enum(MISO_DISCOVERY_MODES).default('static'),
  MESH_NODE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('warn'),
  MESH_MISO_PERSIST_DELAY_MS: z.coerce.number().int().min(0).optional(),
  MESH_MISO_DEBOUNCE_MS: z.coerce.number().int().min(0).optional(),
  MESH_REPLICATION_SEMI_SPACE_MB: z.coerce.number().int().min(1).max(64).default(DEFAULT_REPLICATION_SEMI_SPACE_MB),
  MESH_REQUEST_DEADLINE_MS: z.coerce.number().int().positive().optional(),
  TOXIPROXY_BIN: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, '.cache', 'bin', 'toxiproxy-server')),
});

export type Isolation = 'netns' | 'loopback';

export interface MeshConfig {
  readonly name: string;
  readonly nodes: number;
  /** none | site | regional | path of a latency file */
  readonly latency: string;
  /** Directory with the Sofia CSVs (N.csv); undefined means generated data. */
  readonly dataDir: string | undefined;
  readonly stateRoot: string;
  readonly isolation: Isolation;
  /** process: bare processes per node; faasd: containerd + faasd per node (images/node). */
  readonly runtime: 'process' | 'faasd';
  readonly subnet: string | undefined;
  readonly portBase: number | undefined;
  /** Fixed mesh secret; undefined means a random one per mesh (kept in the state directory). */
  readonly secret: string | undefined;
  readonly nodeTimeoutMs: number;
  readonly deadlineMs: number;
  readonly forwardMode: 'parallel' | 'sequential';
  /** SYNCMESH_REPLAY_WINDOW_MS of every node; undefined keeps the function's default. */
  readonly replayWindowMs: number | undefined;
  /** disk: each node's test server keeps its data in its own data directory; memory: in the JVM heap. */
  readonly mongoStorage: 'disk' | 'memory';
  readonly mongoHeapMb: number;
  /** The test server's oplog window (`--oplog-max-entries`, `--oplog-max-age-seconds`); undefined keeps its defaults (10,000 entries, 120 s). */
  readonly mongoOplogMaxEntries: number | undefined;
  readonly mongoOplogMaxAgeS: number | undefined;
  readonly readyTimeoutMs: number;
  readonly startConcurrency: number;
  readonly functionMain: string;
  readonly loadCli: string;
  readonly listenerMain: string;
  readonly agentMain: string;
  /** Which node processes run (the function always; the listener and MISO agent by default). */
  readonly services: ReadonlyArray<(typeof NODE_ROLES)[number]>;
  /** static: every agent gets the others in MISO_PEERS; mdns: MISO_MDNS=on on the node's eth0 (netns only). */
  readonly misoDiscovery: MisoDiscovery;
  readonly nodeLogLevel: string;
  /** MISO_PERSIST_DELAY_MS of every agent; undefined keeps the agent's default (0: an op waits for its write). */
  readonly misoPersistDelayMs?: number | undefined;
  /** MISO_DEBOUNCE_MS of every agent; undefined keeps the agent's default (200 ms). */
  readonly misoDebounceMs?: number | undefined;
  /** `--max-semi-space-size` (MB) of the function and the listener, the processes on the replication path (see services.ts). */
  readonly replicationSemiSpaceMb: number;
  /** SYNCMESH_REQUEST_DEADLINE_MS of every function (a whole request); undefined keeps the function's default. */
  readonly requestDeadlineMs?: number | undefined;
  readonly toxiproxyBin: string;
}

/** Reads the configuration from `env` (tests pass their own). Throws EDGE_MESH_CONFIG naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): MeshConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new MeshError('EDGE_MESH_CONFIG', `invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  if (e.MESH_DEADLINE_MS < e.MESH_NODE_TIMEOUT_MS) {
    throw new MeshError(
      'EDGE_MESH_CONFIG',
      `invalid configuration: MESH_DEADLINE_MS (${e.MESH_DEADLINE_MS}) must be at least MESH_NODE_TIMEOUT_MS (${e.MESH_NODE_TIMEOUT_MS})`,
    );
  }
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const isolation: Isolation = e.MESH_ISOLATION === 'auto' ? (isRoot ? 'netns' : 'loopback') : e.MESH_ISOLATION;
  if (isolation === 'netns' && !isRoot) {
    throw new MeshError('EDGE_MESH_NOT_ROOT', 'MESH_ISOLATION=netns needs root (network namespaces); run as root or use MESH_ISOLATION=loopback');
  }
  assertDiscoveryAllowed(isolation, e.MESH_MISO_DISCOVERY);
  const dataDir = e.MESH_DATA && e.MESH_DATA.trim() !== '' ? resolve(e.MESH_DATA) : undefined;
  return Object.freeze({
    name: e.MESH_NAME,
    nodes: e.MESH_NODES,
    latency: e.MESH_LATENCY,
    dataDir,
    stateRoot: resolve(e.MESH_STATE_DIR),
    isolation,
    runtime: e.MESH_RUNTIME,
    subnet: e.MESH_SUBNET,
    portBase: e.MESH_PORT_BASE,
    secret: e.SYNCMESH_MESH_SECRET,
    nodeTimeoutMs: e.MESH_NODE_TIMEOUT_MS,
    deadlineMs: e.MESH_DEADLINE_MS,
    forwardMode: e.MESH_FORWARD_MODE,
    replayWindowMs: e.MESH_REPLAY_WINDOW_MS,
    mongoStorage: e.MESH_MONGO_STORAGE,
    mongoHeapMb: e.MESH_MONGO_HEAP_MB,
    mongoOplogMaxEntries: e.MESH_MONGO_OPLOG_MAX_ENTRIES,
    mongoOplogMaxAgeS: e.MESH_MONGO_OPLOG_MAX_AGE_S,
    readyTimeoutMs: e.MESH_READY_TIMEOUT_MS,
    startConcurrency: e.MESH_START_CONCURRENCY,
    functionMain: resolve(e.MESH_FUNCTION_MAIN),
    loadCli: resolve(e.MESH_LOAD_CLI),
    listenerMain: resolve(e.MESH_LISTENER_MAIN),
    agentMain: resolve(e.MESH_AGENT_MAIN),
    services: Object.freeze([...e.MESH_SERVICES]),
    misoDiscovery: e.MESH_MISO_DISCOVERY,
    nodeLogLevel: e.MESH_NODE_LOG_LEVEL,
    misoPersistDelayMs: e.MESH_MISO_PERSIST_DELAY_MS,
    misoDebounceMs: e.MESH_MISO_DEBOUNCE_MS,
    replicationSemiSpaceMb: e.MESH_REPLICATION_SEMI_SPACE_MB,
    requestDeadlineMs: e.MESH_REQUEST_DEADLINE_MS,
    toxiproxyBin: resolve(e.TOXIPROXY_BIN),
  });
}

/**
 * mDNS discovery multicasts on the node's interface, so it needs one namespace per node: in the
 * loopback fallback every agent would multicast from the host namespace, which a shared machine
 * must never do. Throws EDGE_MESH_CONFIG for that combination.
 */
export function assertDiscoveryAllowed(isolation: Isolation, discovery: MisoDiscovery): void {
  if (discovery === 'mdns' && isolation !== 'netns') {
    throw new MeshError(
      'EDGE_MESH_CONFIG',
      `invalid configuration: MESH_MISO_DISCOVERY=mdns needs MESH_ISOLATION=netns (root): with isolation '${isolation}' the agents would send multicast from the host namespace; run as root, or use MESH_MISO_DISCOVERY=static`,
    );
  }
}
