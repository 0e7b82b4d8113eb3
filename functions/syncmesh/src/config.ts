/**
 * All configuration of the Syncmesh function, read once from the environment, validated and
 * frozen. Every variable, its default and its meaning is listed in ../README.md.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';
import { checkSecret, MIN_SECRET_BYTES } from '@syncmesh-edge/mesh-auth';
import { configProblems, logLevel, withMongoUriFromFile } from '@syncmesh-edge/log/env';
import { SyncmeshError } from './errors.js';
import { parseAllowedPeers, type AllowedPeers } from './mesh/peers.js';

/** of-watchdog (http mode) proxies to this port inside the function container. */
export const DEFAULT_PORT = 3000;
export const DEFAULT_MONGODB_URI = 'mongodb://127.0.0.1:27017/?directConnection=true';
/** Where faasd mounts the secret named `mesh-secret` inside a function container. */
export const DEFAULT_MESH_SECRET_FILE = '/var/openfaas/secrets/mesh-secret';
export const DEFAULT_NODE_TIMEOUT_MS = 5_000; // one peer may take this long
export const DEFAULT_DEADLINE_MS = 15_000; // the whole fan-out may take this long
export const DEFAULT_MAX_HOPS = 1; // forwarded requests are not forwarded again
export const DEFAULT_MAX_LIMIT = 100_000; // largest accepted `limit`
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024; // 1 MiB, decompressed
export const DEFAULT_MAX_QUERY_DEPTH = 6;
export const DEFAULT_MAX_EXTERNAL_NODES = 64;
export const DEFAULT_MAX_SENSORS_PER_MUTATION = 10_000;
export const DEFAULT_REPLAY_WINDOW_MS = 30_000;
export const DEFAULT_GZIP_MIN_BYTES = 1024;
/**
 * Tombstones of deleted replicas are kept this long (7 days): an origin re-sends a batch whose
 * acknowledgement it lost when it starts again, possibly after a newer batch deleted the
 * reading; the tombstone makes that old upsert a no-op instead of a resurrection. See README,
 * "Replicas accept only newer revisions".
 */
export const DEFAULT_TOMBSTONE_TTL_S = 7 * 24 * 3600;
/** A refused request's body is read and thrown away up to this many bytes (16 MiB) so that the client can read the answer; beyond, the connection is closed. */
export const DEFAULT_MAX_DISCARD_BYTES = 16 * 1024 * 1024;
/** Where faasd mounts the secret named `write-key` inside a function container. */
export const DEFAULT_WRITE_KEY_FILE = '/var/openfaas/secrets/write-key';
export const DEFAULT_MAX_ROOT_FIELDS = 20; // root fields (aliases count) per operation
export const DEFAULT_MAX_TOTAL_LIMIT = 200_000; // sum of `sensors` limits per request; no limit counts as SYNCMESH_MAX_LIMIT
export const DEFAULT_REQUEST_DEADLINE_MS = 20_000; // a whole request, fan-out included (at least SYNCMESH_DEADLINE_MS + 5 s)
/** The local part of a request may take this long after the fan-out's deadline. */
export const REQUEST_DEADLINE_MARGIN_MS = 5_000;
export const DEFAULT_MAX_DELETE_RANGE_DAYS = 31; // widest deleteInTimeRange
export const DEFAULT_MAX_QUERY_TOKENS = 2_000; // GraphQL tokens per document (graphql-js parse stops there)
export const DEFAULT_MAX_SELECTIONS = 500; // field selections per operation, every fragment spread expanded
export const DEFAULT_MAX_ANSWER_VALUES = 1_000_000; // values an answer may hold (leaves × the list limits above them)
export const DEFAULT_MAX_INTROSPECTION_DEPTH = 20; // the standard introspection query (graphql-js getIntrospectionQuery) nests 15 deep
/**
 * CPU for parsing, analysing and validating one document: a safety net behind the structural
 * limits (the worst document they let through takes ~25 ms on an x86 core), with room for a
 * Raspberry Pi and for VMs under software emulation, where a 12-field aggregate measured 504 ms
 * warm (test-tf-local, 2026-11-28; 200 ms refused it).
 */
export const DEFAULT_MAX_PREPARE_CPU_MS = 2_000;
export const DEFAULT_MAX_PENDING_ANSWER_BYTES = 64 * 1024 * 1024; // answers written but not yet read by their clients
/** Estimated values of the answers being built at once (~75 bytes of heap each while built: 1.6 M ≈ 120 MB). */
export const DEFAULT_MAX_VALUES_IN_FLIGHT = 1_600_000;
/**
 * Anti-entropy rounds (replication/antientropy.ts) every 15 minutes: each costs one read of the
 * own collection and, per subscriber, one read of its replicas of this node (a sensor-month:
 * ~1 s of the test server's time). 0 turns the rounds off.
 */
export const DEFAULT_ANTI_ENTROPY_INTERVAL_S = 900;
/**
 * Deadline of one replication request to a subscriber (10 s). A subscriber answers 202 (still
 * applying) after 40 % of it, and requests carry what it applies in 25 % of it.
 */
export const DEFAULT_REPLICATION_TIMEOUT_MS = 10_000;

const list = (raw: string) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

const positiveInt = (def: number) => z.coerce.number().int().positive().default(def);

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULT_PORT),
  HOST: z.string().min(1).default('0.0.0.0'),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must start with mongodb:// or mongodb+srv://')
    .default(DEFAULT_MONGODB_URI),
  SYNCMESH_NODE_ID: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,64}$/, 'letters, digits and ._:- only, at most 64')
    .optional(),
  SYNCMESH_MESH_SECRET: z.string().optional(),
  SYNCMESH_MESH_SECRET_FILE: z.string().default(DEFAULT_MESH_SECRET_FILE),
  SYNCMESH_DATABASES: z.string().default('syncmesh').transform(list),
  SYNCMESH_COLLECTIONS: z.string().default('sensor_data').transform(list),
  SYNCMESH_META_DATABASE: z.string().default('syncmesh_meta'),
  SYNCMESH_NODE_TIMEOUT_MS: positiveInt(DEFAULT_NODE_TIMEOUT_MS),
  SYNCMESH_DEADLINE_MS: positiveInt(DEFAULT_DEADLINE_MS),
  SYNCMESH_MAX_HOPS: z.coerce.number().int().min(0).max(8).default(DEFAULT_MAX_HOPS),
  SYNCMESH_FORWARD_MODE: z.enum(['parallel', 'sequential']).default('parallel'),
  SYNCMESH_MAX_LIMIT: positiveInt(DEFAULT_MAX_LIMIT),
  SYNCMESH_MAX_BODY_BYTES: positiveInt(DEFAULT_MAX_BODY_BYTES),
  SYNCMESH_MAX_QUERY_DEPTH: positiveInt(DEFAULT_MAX_QUERY_DEPTH),
  SYNCMESH_MAX_EXTERNAL_NODES: positiveInt(DEFAULT_MAX_EXTERNAL_NODES),
  SYNCMESH_MAX_SENSORS_PER_MUTATION: positiveInt(DEFAULT_MAX_SENSORS_PER_MUTATION),
  SYNCMESH_REPLAY_WINDOW_MS: positiveInt(DEFAULT_REPLAY_WINDOW_MS),
  SYNCMESH_GZIP_MIN_BYTES: z.coerce.number().int().min(0).default(DEFAULT_GZIP_MIN_BYTES),
  SYNCMESH_ALLOWED_PEERS: z.string().default(''),
  SYNCMESH_WRITE_KEY: z.string().optional(),
  SYNCMESH_WRITE_KEY_FILE: z.string().default(DEFAULT_WRITE_KEY_FILE),
  SYNCMESH_READ_KEY: z.string().optional(),
  SYNCMESH_MAX_ROOT_FIELDS: positiveInt(DEFAULT_MAX_ROOT_FIELDS),
  SYNCMESH_MAX_TOTAL_LIMIT: positiveInt(DEFAULT_MAX_TOTAL_LIMIT),
  SYNCMESH_REQUEST_DEADLINE_MS: z.coerce.number().int().positive().optional(),
  SYNCMESH_MAX_DELETE_RANGE_DAYS: z.coerce.number().positive().default(DEFAULT_MAX_DELETE_RANGE_DAYS),
  SYNCMESH_MAX_QUERY_TOKENS: positiveInt(DEFAULT_MAX_QUERY_TOKENS),
  SYNCMESH_MAX_SELECTIONS: positiveInt(DEFAULT_MAX_SELECTIONS),
  SYNCMESH_MAX_ANSWER_VALUES: positiveInt(DEFAULT_MAX_ANSWER_VALUES),
  SYNCMESH_MAX_INTROSPECTION_DEPTH: positiveInt(DEFAULT_MAX_INTROSPECTION_DEPTH),
  SYNCMESH_MAX_PREPARE_CPU_MS: positiveInt(DEFAULT_MAX_PREPARE_CPU_MS),
  SYNCMESH_MAX_PENDING_ANSWER_BYTES: positiveInt(DEFAULT_MAX_PENDING_ANSWER_BYTES),
  SYNCMESH_MAX_VALUES_IN_FLIGHT: positiveInt(DEFAULT_MAX_VALUES_IN_FLIGHT),
  LOG_LEVEL: logLevel(),
  SYNCMESH_AUTH_ACCEPT_V1: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
  SYNCMESH_TOMBSTONE_TTL_S: positiveInt(DEFAULT_TOMBSTONE_TTL_S),
  SYNCMESH_MAX_DISCARD_BYTES: z.coerce.number().int().min(0).default(DEFAULT_MAX_DISCARD_BYTES),
  SYNCMESH_ANTI_ENTROPY_INTERVAL_S: z.coerce.number().min(0).default(DEFAULT_ANTI_ENTROPY_INTERVAL_S),
  SYNCMESH_ANTI_ENTROPY_BUCKET: z.enum(['hour', 'day']).default('day'),
  SYNCMESH_REPLICATION_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(300_000).default(DEFAULT_REPLICATION_TIMEOUT_MS),
});

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly mongodbUri: string;
  /** This node's id in the mesh (registry id of the own node). */
  readonly nodeId: string;
  /** Shared mesh secret; undefined means this node neither forwards nor accepts forwarded requests. */
  readonly meshSecret: string | undefined;
  readonly databases: readonly string[];
  readonly collections: readonly string[];
  readonly metaDatabase: string;
  readonly nodeTimeoutMs: number;
  readonly deadlineMs: number;
  readonly maxHops: number;
  readonly forwardMode: 'parallel' | 'sequential';
  readonly maxLimit: number;
  readonly maxBodyBytes: number;
  readonly maxQueryDepth: number;
  readonly maxExternalNodes: number;
  readonly maxSensorsPerMutation: number;
  readonly replayWindowMs: number;
  readonly gzipMinBytes: number;
  readonly logLevel: string;
  /** Deprecated, for one release: also accept v1 signatures (HMAC of the raw secret, no nonce/target). */
  readonly acceptV1: boolean;
  /** How long tombstones of deleted replicas are kept, in seconds. */
  readonly tombstoneTtlS: number;
  /** How much of a refused request's body is read and discarded before the connection closes. */
  readonly maxDiscardBytes: number;
  /** Members of the mesh besides the registry's nodes, which `external_nodes` may name. */
  readonly allowedPeers: AllowedPeers;
  /** Key for data writes (`Authorization: Bearer <key>`); undefined: only signed requests write. */
  readonly writeKey: string | undefined;
  /** Key for reads; undefined: reads are open. */
  readonly readKey: string | undefined;
  readonly maxRootFields: number;
  readonly maxTotalLimit: number;
  readonly requestDeadlineMs: number;
  readonly maxDeleteRangeMs: number;
  /** GraphQL tokens per document. */
  readonly maxQueryTokens: number;
  /** Field selections per operation, fragments expanded where they are spread. */
  readonly maxSelections: number;
  /** Values an answer may hold (estimated before anything runs). */
  readonly maxAnswerValues: number;
  /** Nesting of an operation that selects only __schema, __type and __typename. */
  readonly maxIntrospectionDepth: number;
  /** CPU ms one document may take to parse, analyse and validate; beyond, it is refused (and remembered). */
  readonly maxPrepareCpuMs: number;
  /** Bytes of answers not yet read by their clients; beyond, new queries are refused (503). */
  readonly maxPendingAnswerBytes: number;
  /** Estimated answer values of the data requests running at once; beyond, new ones are refused (503), unless none runs. */
  readonly maxValuesInFlight: number;
  /** Seconds between anti-entropy rounds; 0: none. */
  readonly antiEntropyIntervalS: number;
  /** Time bucket that anti-entropy compares digests per. */
  readonly antiEntropyBucket: 'hour' | 'day';
  /** Deadline of one replication request to a subscriber, ms. */
  readonly replicationTimeoutMs: number;
}

/** Reads the configuration from `env` (tests pass their own). Throws EDGE_SYNCMESH_CONFIG naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(withMongoUriFromFile(env, configFail));
  if (!parsed.success) throw configFail(configProblems(parsed.error));
  const e = parsed.data;
  if (e.SYNCMESH_DEADLINE_MS < e.SYNCMESH_NODE_TIMEOUT_MS) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_CONFIG',
      `invalid configuration: SYNCMESH_DEADLINE_MS (${e.SYNCMESH_DEADLINE_MS}) must be at least SYNCMESH_NODE_TIMEOUT_MS (${e.SYNCMESH_NODE_TIMEOUT_MS})`,
    );
  }
  const requestDeadlineMs = e.SYNCMESH_REQUEST_DEADLINE_MS ?? Math.max(DEFAULT_REQUEST_DEADLINE_MS, e.SYNCMESH_DEADLINE_MS + REQUEST_DEADLINE_MARGIN_MS);
  if (requestDeadlineMs < e.SYNCMESH_DEADLINE_MS) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_CONFIG',
      `invalid configuration: SYNCMESH_REQUEST_DEADLINE_MS (${requestDeadlineMs}) must be at least SYNCMESH_DEADLINE_MS (${e.SYNCMESH_DEADLINE_MS})`,
    );
  }
  if (e.SYNCMESH_DATABASES.length === 0 || e.SYNCMESH_COLLECTIONS.length === 0) {
    throw new SyncmeshError('EDGE_SYNCMESH_CONFIG', 'invalid configuration: SYNCMESH_DATABASES and SYNCMESH_COLLECTIONS need at least one name');
  }
  const meshSecret = e.SYNCMESH_MESH_SECRET ?? readSecretFile(e.SYNCMESH_MESH_SECRET_FILE);
  if (meshSecret !== undefined && Buffer.byteLength(meshSecret, 'utf8') < MIN_SECRET_BYTES) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_CONFIG',
      `invalid configuration: the mesh secret (SYNCMESH_MESH_SECRET or SYNCMESH_MESH_SECRET_FILE) has ${Buffer.byteLength(meshSecret, 'utf8')} bytes; at least ${MIN_SECRET_BYTES} are required (generate one with: openssl rand -hex 32)`,
    );
  }
  const nodeId = e.SYNCMESH_NODE_ID ?? hostname();
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(nodeId)) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_CONFIG',
      `invalid configuration: the host name '${nodeId.slice(0, 80)}' is not a valid node id; set SYNCMESH_NODE_ID (letters, digits and ._:- only, at most 64)`,
    );
  }
  const writeKey = configured('SYNCMESH_WRITE_KEY', () =>
    optionalKey(e.SYNCMESH_WRITE_KEY ?? readSecretFile(e.SYNCMESH_WRITE_KEY_FILE, 'write key'), 'the write key'),
  );
  if (writeKey !== undefined && writeKey === meshSecret) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_CONFIG',
      'invalid configuration: SYNCMESH_WRITE_KEY must differ from the mesh secret (clients hold the write key; only nodes hold the mesh secret)',
    );
  }
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    mongodbUri: e.MONGODB_URI,
    nodeId,
    meshSecret,
    databases: Object.freeze([...e.SYNCMESH_DATABASES]),
    collections: Object.freeze([...e.SYNCMESH_COLLECTIONS]),
    metaDatabase: e.SYNCMESH_META_DATABASE,
    nodeTimeoutMs: e.SYNCMESH_NODE_TIMEOUT_MS,
    deadlineMs: e.SYNCMESH_DEADLINE_MS,
    maxHops: e.SYNCMESH_MAX_HOPS,
    forwardMode: e.SYNCMESH_FORWARD_MODE,
    maxLimit: e.SYNCMESH_MAX_LIMIT,
    maxBodyBytes: e.SYNCMESH_MAX_BODY_BYTES,
    maxQueryDepth: e.SYNCMESH_MAX_QUERY_DEPTH,
    maxExternalNodes: e.SYNCMESH_MAX_EXTERNAL_NODES,
    maxSensorsPerMutation: e.SYNCMESH_MAX_SENSORS_PER_MUTATION,
    replayWindowMs: e.SYNCMESH_REPLAY_WINDOW_MS,
    gzipMinBytes: e.SYNCMESH_GZIP_MIN_BYTES,
    logLevel: e.LOG_LEVEL,
    acceptV1: e.SYNCMESH_AUTH_ACCEPT_V1,
    tombstoneTtlS: e.SYNCMESH_TOMBSTONE_TTL_S,
    maxDiscardBytes: e.SYNCMESH_MAX_DISCARD_BYTES,
    allowedPeers: configured('SYNCMESH_ALLOWED_PEERS', () => parseAllowedPeers(e.SYNCMESH_ALLOWED_PEERS)),
    writeKey,
    readKey: configured('SYNCMESH_READ_KEY', () => optionalKey(e.SYNCMESH_READ_KEY, 'the read key')),
    maxRootFields: e.SYNCMESH_MAX_ROOT_FIELDS,
    maxTotalLimit: e.SYNCMESH_MAX_TOTAL_LIMIT,
    requestDeadlineMs,
    maxDeleteRangeMs: e.SYNCMESH_MAX_DELETE_RANGE_DAYS * 24 * 3600 * 1000,
    maxQueryTokens: e.SYNCMESH_MAX_QUERY_TOKENS,
    maxSelections: e.SYNCMESH_MAX_SELECTIONS,
    maxAnswerValues: e.SYNCMESH_MAX_ANSWER_VALUES,
    maxIntrospectionDepth: e.SYNCMESH_MAX_INTROSPECTION_DEPTH,
    maxPrepareCpuMs: e.SYNCMESH_MAX_PREPARE_CPU_MS,
    maxPendingAnswerBytes: e.SYNCMESH_MAX_PENDING_ANSWER_BYTES,
    maxValuesInFlight: e.SYNCMESH_MAX_VALUES_IN_FLIGHT,
    antiEntropyIntervalS: e.SYNCMESH_ANTI_ENTROPY_INTERVAL_S,
    antiEntropyBucket: e.SYNCMESH_ANTI_ENTROPY_BUCKET,
    replicationTimeoutMs: e.SYNCMESH_REPLICATION_TIMEOUT_MS,
  });
}

/** Runs `read`, turning any error into EDGE_SYNCMESH_CONFIG that names `variable` (the cause is kept). */
function configured<T>(variable: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof SyncmeshError && err.code === 'EDGE_SYNCMESH_CONFIG') throw err;
    throw new SyncmeshError('EDGE_SYNCMESH_CONFIG', `invalid configuration: ${variable}: ${(err as Error).message}`, { cause: err });
  }
}

/** A key is optional, but when given it must have at least 32 bytes. */
function optionalKey(key: string | undefined, what: string): string | undefined {
  return key === undefined ? undefined : checkSecret(key, what);
}

const configFail = (message: string, cause?: unknown) =>
  new SyncmeshError('EDGE_SYNCMESH_CONFIG', `invalid configuration: ${message}`, cause === undefined ? {} : { cause });

function readSecretFile(path: string, what = 'mesh secret'): string | undefined {
  try {
    const secret = readFileSync(path, 'utf8').trim();
    return secret.length > 0 ? secret : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // no secret mounted: standalone node
    throw new SyncmeshError('EDGE_SYNCMESH_CONFIG', `cannot read the ${what} file ${path}`, { cause: err });
  }
}
