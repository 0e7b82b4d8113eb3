/**
 * The listener's whole configuration, read from the environment once at startup, validated and
 * frozen. Every variable, with its default, is documented in listeners/README.md.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';
import { checkNodeId, MIN_SECRET_BYTES } from '@syncmesh-edge/mesh-auth';
import { ERROR_CODES, ListenerError } from './errors.js';
import { configProblems, intEnv, logLevel, withMongoUriFromFile } from '@syncmesh-edge/log/env';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '@syncmesh-edge/log/service';

export const DEFAULT_MONGODB_URI = 'mongodb://127.0.0.1:27017/';
export const DEFAULT_DATABASE = 'syncmesh';
export const DEFAULT_COLLECTIONS = 'sensor_data';
/** Where the listener keeps its own state (resume tokens, dead letters). Never watched. */
export const DEFAULT_META_DATABASE = 'syncmesh_meta';
/** The faasd gateway route of the Syncmesh function on a node. */
export const DEFAULT_FUNCTION_URL = 'http://127.0.0.1:8080/function/syncmesh-fn';
/** The faasd secret the function reads too (`faas-cli secret create mesh-secret`). */
export const DEFAULT_MESH_SECRET_FILE = '/var/openfaas/secrets/mesh-secret';
/**
 * Most events per POST. A burst fills batches while the previous POST is in flight; 1,000 per POST
 * made a burst of 10,000 inserts reach one subscriber 10 % faster than 100 per POST (5,268 vs
 * 4,754 readings/s), five subscribers 19 % faster, and cost the origin's database a quarter less
 * CPU per reading (fewer outbox documents); a single event still goes alone at once.
 */
export const DEFAULT_BATCH_SIZE = 1_000;
/**
 * How long a partial batch waits for more events before it is sent. 0: at once. Events that come
 * while a POST is in flight still go together in the next one (up to LISTENER_BATCH_SIZE), so a
 * burst is batched anyway; a wait only delayed a lone event (2 ms before issue 25's latency work).
 */
export const DEFAULT_BATCH_WAIT_MS = 0;
/** Events read but not yet acknowledged, per collection; reading pauses when it is full. */
export const DEFAULT_QUEUE_MAX = 10_000;
/** First retry delay after a failed delivery or stream error; doubles up to the maximum. */
export const DEFAULT_RETRY_BASE_MS = 100;
/** Cap of the retry delay (before jitter). */
export const DEFAULT_RETRY_MAX_MS = 5_000;
/** Deadline of one POST to the function. */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 10_000;
/** Longest pause between two polls of an idle change stream (servers whose getMore does not wait). */
export const DEFAULT_POLL_MAX_MS = 250;

const int = intEnv;
const name = z
  .string()
  .trim()
  .min(1)
  .regex(/^[^$.\s/\\"]+$/, 'must be a plain MongoDB name (no $ . / \\ " or spaces)');

const EnvSchema = z.object({
  MONGODB_URI: z
    .string()
    .trim()
    .regex(/^mongodb(\+srv)?:\/\//, 'must start with mongodb:// or mongodb+srv://')
    .default(DEFAULT_MONGODB_URI),
  LISTENER_DATABASE: name.default(DEFAULT_DATABASE),
  LISTENER_COLLECTIONS: z.string().default(DEFAULT_COLLECTIONS),
  LISTENER_META_DATABASE: name.default(DEFAULT_META_DATABASE),
  SYNCMESH_FUNCTION_URL: z
    .string()
    .trim()
    .regex(/^https?:\/\/[^\s]+$/, 'must be an http(s) URL')
    .default(DEFAULT_FUNCTION_URL),
  SYNCMESH_MESH_SECRET: z.string().optional(),
  SYNCMESH_MESH_SECRET_FILE: z.string().default(DEFAULT_MESH_SECRET_FILE),
  LISTENER_NODE_ID: z.string().trim().min(1).optional(),
  LISTENER_FUNCTION_NODE_ID: z.string().trim().min(1).optional(),
  LISTENER_BATCH_SIZE: int(1, 10_000).default(DEFAULT_BATCH_SIZE),
  LISTENER_BATCH_WAIT_MS: int(0, 60_000).default(DEFAULT_BATCH_WAIT_MS),
  LISTENER_QUEUE_MAX: int(1, 1_000_000).default(DEFAULT_QUEUE_MAX),
  LISTENER_RETRY_BASE_MS: int(1, 60_000).default(DEFAULT_RETRY_BASE_MS),
  LISTENER_RETRY_MAX_MS: int(1, 600_000).default(DEFAULT_RETRY_MAX_MS),
  LISTENER_DELIVERY_TIMEOUT_MS: int(100, 600_000).default(DEFAULT_DELIVERY_TIMEOUT_MS),
  LISTENER_POLL_MAX_MS: int(1, 10_000).default(DEFAULT_POLL_MAX_MS),
  LISTENER_DRAIN_TIMEOUT_MS: int(0, 600_000).default(DEFAULT_DRAIN_TIMEOUT_MS),
  LISTENER_HEALTH_ADDR: z
    .string()
    .trim()
    .regex(/^(\[[0-9a-fA-F:]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port, e.g. 127.0.0.1:9464')
    .optional(),
  LOG_LEVEL: logLevel(),
});

export interface ListenerConfig {
  readonly mongoUri: string;
  readonly database: string;
  readonly collections: readonly string[];
  readonly metaDatabase: string;
  /** Base URL of the function; the listener POSTs to `${functionUrl}/events` and `/resync`. */
  readonly functionUrl: string;
  readonly meshSecret: string;
  readonly nodeId: string;
  /**
   * Node id of the function the listener delivers to (its SYNCMESH_NODE_ID): requests are
   * signed for this id and verify nowhere else. Defaults to `nodeId` (same node).
   */
  readonly functionNodeId: string;
  readonly batchSize: number;
  readonly batchWaitMs: number;
  readonly queueMax: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly deliveryTimeoutMs: number;
  readonly pollMaxMs: number;
  readonly drainTimeoutMs: number;
  readonly logLevel: string;
  /** host:port of the health endpoints; undefined = no endpoints. */
  readonly healthAddr: string | undefined;
}

function configError(message: string): ListenerError {
  return new ListenerError(ERROR_CODES.CONFIG, `invalid listener configuration: ${message}`);
}

const configFail = (message: string, cause?: unknown) =>
  new ListenerError(ERROR_CODES.CONFIG, `invalid listener configuration: ${message}`, cause === undefined ? undefined : { cause });

/**
 * Reads and validates the configuration. Throws a ListenerError (EDGE_LISTENER_CONFIG) naming
 * every offending variable. `readFile` is injectable so tests need no files.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): ListenerConfig {
  // Empty variables count as unset, as in a compose file that lists a name without a value.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(withMongoUriFromFile(present, configFail, readFile));
  if (!parsed.success) {
    throw configError(configProblems(parsed.error));
  }
  const e = parsed.data;

  // Same rule as the function (functions/syncmesh/src/config.ts): the variable wins, else the
  // file, by default the faasd secret both containers can mount.
  let secret = e.SYNCMESH_MESH_SECRET;
  if (!secret) {
    try {
      secret = readFile(e.SYNCMESH_MESH_SECRET_FILE).trim();
    } catch (err) {
      throw new ListenerError(
        ERROR_CODES.CONFIG,
        `invalid listener configuration: no mesh secret: SYNCMESH_MESH_SECRET is unset and SYNCMESH_MESH_SECRET_FILE ${e.SYNCMESH_MESH_SECRET_FILE} cannot be read (${(err as Error).message})`,
        { cause: err },
      );
    }
  }
  if (!secret) {
    throw configError(`the mesh secret is empty: fill ${e.SYNCMESH_MESH_SECRET_FILE} or set SYNCMESH_MESH_SECRET`);
  }
  if (Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES) {
    throw configError(
      `the mesh secret has ${Buffer.byteLength(secret, 'utf8')} bytes; at least ${MIN_SECRET_BYTES} are required (generate one with: openssl rand -hex 32)`,
    );
  }
  const nodeId = e.LISTENER_NODE_ID ?? hostname();
  const functionNodeId = e.LISTENER_FUNCTION_NODE_ID ?? nodeId;
  for (const [name, id] of [
    ['LISTENER_NODE_ID', nodeId],
    ['LISTENER_FUNCTION_NODE_ID', functionNodeId],
  ] as const) {
    try {
      checkNodeId(id);
    } catch (err) {
      throw new ListenerError(
        ERROR_CODES.CONFIG,
        `invalid listener configuration: ${name} '${id.slice(0, 80)}' is not a valid node id (letters, digits and ._:- only, at most 64)`,
        { cause: err },
      );
    }
  }

  const collections = [
    ...new Set(
      e.LISTENER_COLLECTIONS.split(',')
        .map((c) => c.trim())
        .filter(Boolean),
    ),
  ];
  if (collections.length === 0) throw configError('LISTENER_COLLECTIONS names no collection');
  const bad = collections.filter((c) => !name.safeParse(c).success || c.startsWith('system.'));
  if (bad.length) throw configError(`LISTENER_COLLECTIONS has invalid names: ${bad.join(', ')}`);
  if (e.LISTENER_META_DATABASE === e.LISTENER_DATABASE) {
    throw configError(`LISTENER_META_DATABASE must differ from LISTENER_DATABASE (${e.LISTENER_DATABASE}): the listener would replicate its own state`);
  }
  if (e.LISTENER_RETRY_BASE_MS > e.LISTENER_RETRY_MAX_MS) {
    throw configError(`LISTENER_RETRY_BASE_MS (${e.LISTENER_RETRY_BASE_MS}) exceeds LISTENER_RETRY_MAX_MS (${e.LISTENER_RETRY_MAX_MS})`);
  }

  return Object.freeze({
    mongoUri: e.MONGODB_URI,
    database: e.LISTENER_DATABASE,
    collections: Object.freeze(collections),
    metaDatabase: e.LISTENER_META_DATABASE,
    functionUrl: e.SYNCMESH_FUNCTION_URL.replace(/\/+$/, ''),
    meshSecret: secret,
    nodeId,
    functionNodeId,
    batchSize: e.LISTENER_BATCH_SIZE,
    batchWaitMs: e.LISTENER_BATCH_WAIT_MS,
    queueMax: e.LISTENER_QUEUE_MAX,
    retryBaseMs: e.LISTENER_RETRY_BASE_MS,
    retryMaxMs: e.LISTENER_RETRY_MAX_MS,
    deliveryTimeoutMs: e.LISTENER_DELIVERY_TIMEOUT_MS,
    pollMaxMs: e.LISTENER_POLL_MAX_MS,
    drainTimeoutMs: e.LISTENER_DRAIN_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    healthAddr: e.LISTENER_HEALTH_ADDR,
  });
}
