import { readFileSync } from 'node:fs';
/**
 * The agent's configuration: read from the environment once, validated, frozen.
 * Every variable is documented in miso-agent/README.md.
 */
import { z } from 'zod';
import { MIN_SECRET_BYTES } from '@syncmesh-edge/mesh-auth';
import { configProblems, logLevel, withMongoUriFromFile } from '@syncmesh-edge/log/env';
import { MisoError } from './errors.js';

/** Default debounce of replication per (object, CRDT). MISO's evaluation default. */
export const DEFAULT_DEBOUNCE_MS = 200;
/** Default write-behind delay of persistence. */
export const DEFAULT_PERSIST_DELAY_MS = 100;
/** Heartbeats on every peer stream. */
export const DEFAULT_HEARTBEAT_MS = 1_000;
/** A peer silent for this long is dropped (MISO: 24 h). */
export const DEFAULT_PEER_TIMEOUT_MS = 3_000;
/** Anti-entropy digest exchange period. */
export const DEFAULT_ANTI_ENTROPY_MS = 5_000;
/** Deadline of a restore fetch (Algorithm 2) to each peer. */
export const DEFAULT_FETCH_TIMEOUT_MS = 1_000;
/** How many peers a restore asks at most. */
export const DEFAULT_RESTORE_FANOUT = 3;
/** Reconnect backoff bounds (capped exponential, equal jitter: @syncmesh-edge/backoff). */
export const DEFAULT_BACKOFF_MIN_MS = 100;
export const DEFAULT_BACKOFF_MAX_MS = 5_000;
/** Largest gRPC message accepted (SDK and peers). */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

const intMs = (def: number) => z.coerce.number().int().min(0).max(86_400_000).default(def);
const onOff = (def: boolean) =>
  z
    .enum(['on', 'off', 'true', 'false', '1', '0'])
    .default(def ? 'on' : 'off')
    .transform((v) => v === 'on' || v === 'true' || v === '1');

const hostPort = /^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/;
/** A static peer: `host:port`, or `node-id@host:port` to pin the node id expected there. */
const staticPeer = /^(?:([A-Za-z0-9._-]{1,64})@)?([^\s:@]+:\d{1,5}|\[[0-9a-fA-F:]+\]:\d{1,5})$/;

/** One entry of MISO_PEERS. */
export interface StaticPeer {
  readonly address: string;
  /** The node id that must answer at `address` (from `id@host:port`); undefined = any mesh member. */
  readonly nodeId: string | undefined;
}

export function parseStaticPeer(entry: string): StaticPeer {
  const m = staticPeer.exec(entry);
  if (!m) throw new MisoError('EDGE_MISO_CONFIG', `invalid agent configuration: MISO_PEERS: '${entry}' is not host:port or node-id@host:port`);
  return { address: m[2]!, nodeId: m[1] };
}

const schema = z
  .object({
    MISO_NODE_ID: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, . _ - (1-64)')
      .optional(),
    MISO_GRPC_ADDR: z.string().regex(hostPort, 'host:port').default('0.0.0.0:7650'),
    MISO_ADVERTISE_ADDR: z.string().regex(hostPort, 'host:port').optional(),
    MISO_SDK_SOCKET: z.string().min(1).default('/run/miso/agent.sock'),
    MISO_FUNCTION_SOCKETS_DIR: z.string().regex(/^\//, 'an absolute path').optional(),
    MISO_PEERS: z
      .string()
      .default('')
      .transform((s) => s.split(/[,\s]+/).filter(Boolean))
      .pipe(z.array(z.string().regex(staticPeer, 'each peer must be host:port or node-id@host:port'))),
    MISO_MDNS: onOff(false),
    MISO_MDNS_INTERFACE: z.string().optional(),
    MISO_MESH_SECRET: z
      .string({ error: `required, at least ${MIN_SECRET_BYTES} bytes (generate one with: openssl rand -hex 32)` })
      .refine((v) => Buffer.byteLength(v, 'utf8') >= MIN_SECRET_BYTES, {
        error: (i) =>
          `has ${Buffer.byteLength(String(i.input), 'utf8')} bytes; at least ${MIN_SECRET_BYTES} are required (generate one with: openssl rand -hex 32)`,
      }),
    MISO_DEBOUNCE_MS: intMs(DEFAULT_DEBOUNCE_MS),
    MISO_PERSIST_DELAY_MS: intMs(DEFAULT_PERSIST_DELAY_MS),
    MISO_HEARTBEAT_MS: intMs(DEFAULT_HEARTBEAT_MS),
    MISO_PEER_TIMEOUT_MS: intMs(DEFAULT_PEER_TIMEOUT_MS),
    MISO_ANTI_ENTROPY_MS: intMs(DEFAULT_ANTI_ENTROPY_MS),
    MISO_FETCH_TIMEOUT_MS: intMs(DEFAULT_FETCH_TIMEOUT_MS),
    MISO_RESTORE_FANOUT: z.coerce.number().int().min(1).max(1000).default(DEFAULT_RESTORE_FANOUT),
    MISO_MAX_MESSAGE_BYTES: z.coerce.number().int().min(65_536).default(DEFAULT_MAX_MESSAGE_BYTES),
    MISO_SEND_FULL_STATE: onOff(false),
    MONGODB_URI: z.string().optional(),
    MISO_MONGO_DB: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,60}$/)
      .default('miso'),
    MISO_METRICS_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
    MISO_METRICS_ADDR: z.string().default('127.0.0.1'),
    LOG_LEVEL: logLevel(),
  })
  .refine((c) => c.MISO_HEARTBEAT_MS === 0 || c.MISO_PEER_TIMEOUT_MS > c.MISO_HEARTBEAT_MS, {
    message: 'MISO_PEER_TIMEOUT_MS must be larger than MISO_HEARTBEAT_MS',
    path: ['MISO_PEER_TIMEOUT_MS'],
  });

export interface AgentConfig {
  /** Stable node id; when unset, generated once and kept in MongoDB (miso.meta). */
  readonly nodeId: string | undefined;
  readonly grpcAddr: string;
  readonly advertiseAddr: string | undefined;
  readonly sdkSocket: string;
  /** Folders of stateful functions, one SDK socket each scoped to its function (unset: none). */
  readonly functionSocketsDir: string | undefined;
  readonly peers: readonly StaticPeer[];
  readonly mdns: boolean;
  readonly mdnsInterface: string | undefined;
  readonly meshSecret: string;
  readonly debounceMs: number;
  readonly persistDelayMs: number;
  readonly heartbeatMs: number;
  readonly peerTimeoutMs: number;
  readonly antiEntropyMs: number;
  readonly fetchTimeoutMs: number;
  readonly restoreFanout: number;
  readonly maxMessageBytes: number;
  /** Replicate the whole CRDT instead of deltas (what MISO does; for comparison only). */
  readonly sendFullState: boolean;
  /** Unset: state in memory only (benchmarks); production always sets it. */
  readonly mongodbUri: string | undefined;
  readonly mongoDb: string;
  /** Unset = no metrics endpoint; 0 = an ephemeral port (tests). */
  readonly metricsPort: number | undefined;
  readonly metricsAddr: string;
  readonly logLevel: string;
}

/**
 * MISO_MESH_SECRET_FILE (e.g. a mounted secret) supplies MISO_MESH_SECRET when that is unset, so
 * the secret need not sit in the process environment.
 */
function withSecretFromFile(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const file = env['MISO_MESH_SECRET_FILE'];
  if (env['MISO_MESH_SECRET'] || !file) return env;
  try {
    return { ...env, MISO_MESH_SECRET: readFileSync(file, 'utf8').trim() };
  } catch (err) {
    throw configFail(`MISO_MESH_SECRET_FILE: cannot read ${file}: ${(err as Error).message}`, err);
  }
}

const configFail = (why: string, cause?: unknown) =>
  new MisoError('EDGE_MISO_CONFIG', `invalid agent configuration: ${why}`, cause === undefined ? undefined : { cause });

/** Reads and validates the environment; throws EDGE_MISO_CONFIG naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AgentConfig {
  const r = schema.safeParse(withMongoUriFromFile(withSecretFromFile(env), configFail));
  if (!r.success) throw configFail(configProblems(r.error));
  const c = r.data;
  return Object.freeze({
    nodeId: c.MISO_NODE_ID,
    grpcAddr: c.MISO_GRPC_ADDR,
    advertiseAddr: c.MISO_ADVERTISE_ADDR,
    sdkSocket: c.MISO_SDK_SOCKET,
    functionSocketsDir: c.MISO_FUNCTION_SOCKETS_DIR || undefined,
    peers: Object.freeze(c.MISO_PEERS.map(parseStaticPeer)),
    mdns: c.MISO_MDNS,
    mdnsInterface: c.MISO_MDNS_INTERFACE,
    meshSecret: c.MISO_MESH_SECRET,
    debounceMs: c.MISO_DEBOUNCE_MS,
    persistDelayMs: c.MISO_PERSIST_DELAY_MS,
    heartbeatMs: c.MISO_HEARTBEAT_MS,
    peerTimeoutMs: c.MISO_PEER_TIMEOUT_MS,
    antiEntropyMs: c.MISO_ANTI_ENTROPY_MS,
    fetchTimeoutMs: c.MISO_FETCH_TIMEOUT_MS,
    restoreFanout: c.MISO_RESTORE_FANOUT,
    maxMessageBytes: c.MISO_MAX_MESSAGE_BYTES,
    sendFullState: c.MISO_SEND_FULL_STATE,
    mongodbUri: c.MONGODB_URI || undefined,
    mongoDb: c.MISO_MONGO_DB,
    metricsPort: c.MISO_METRICS_PORT,
    metricsAddr: c.MISO_METRICS_ADDR,
    logLevel: c.LOG_LEVEL,
  });
}
