/**
 * The async worker's configuration, read from the environment once, validated and frozen.
 * Every variable and its default is in coordination/README.md.
 */
import { configProblems, intEnv, logLevel } from '@syncmesh-edge/log/env';
import { z } from 'zod';
import { CoordinationComponentError, ERROR_CODES } from './errors.js';

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
/** The subject the gateway publishes to: its faas_nats_channel (gateway patch 0003). */
export const DEFAULT_SUBJECT = 'faas-request';
export const DEFAULT_STREAM = 'FAAS_ASYNC';
export const DEFAULT_DLQ_STREAM = 'FAAS_ASYNC_DLQ';
export const DEFAULT_DLQ_SUBJECT = 'faas-dead-letter';
export const DEFAULT_STATUS_BUCKET = 'faas_async_status';
export const DEFAULT_CONSUMER = 'async-worker';
/** Where calls go: the node's gateway (`<url>/function/<name>`). */
export const DEFAULT_GATEWAY_URL = 'http://gateway:8080';
/** Calls in flight at once (the consumer's max_ack_pending). */
export const DEFAULT_CONCURRENCY = 4;
/** Attempts of one call before it is dead-lettered. */
export const DEFAULT_MAX_ATTEMPTS = 5;
export const DEFAULT_RETRY_BASE_MS = 1_000;
export const DEFAULT_RETRY_MAX_MS = 60_000;
/** Deadline of one call of the function. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** How long a call's status stays queryable. */
export const DEFAULT_STATUS_TTL_S = 86_400;
export const DEFAULT_STATUS_ADDR = '127.0.0.1:8093';
/**
 * How long SIGTERM waits for calls in flight: 3 times the services' DEFAULT_DRAIN_TIMEOUT_MS
 * (@syncmesh-edge/log/service), since a call may run up to a minute and one the worker leaves
 * unfinished is dead-lettered as `interrupted` (by default never run again).
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

const int = intEnv;
const url = z
  .string()
  .trim()
  .regex(/^https?:\/\/[^\s]+$/, 'an http(s) URL');
const token = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, '1 to 64 letters, digits, _ or -');
const subject = z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'a literal NATS subject (tokens of letters, digits, _ and -, separated by dots)');

const EnvSchema = z.object({
  ASYNC_WORKER_NATS_URL: z
    .string()
    .trim()
    .regex(/^(nats|tls):\/\/[^\s,]+(,(nats|tls):\/\/[^\s,]+)*$/, 'nats:// or tls:// URLs, comma-separated')
    .default(DEFAULT_NATS_URL),
  ASYNC_WORKER_NKEY_SEED_FILE: z.string().trim().min(1).optional(),
  ASYNC_WORKER_SUBJECT: subject.default(DEFAULT_SUBJECT),
  ASYNC_WORKER_STREAM: token.default(DEFAULT_STREAM),
  ASYNC_WORKER_DLQ_STREAM: token.default(DEFAULT_DLQ_STREAM),
  ASYNC_WORKER_DLQ_SUBJECT: subject.default(DEFAULT_DLQ_SUBJECT),
  ASYNC_WORKER_STATUS_BUCKET: token.default(DEFAULT_STATUS_BUCKET),
  ASYNC_WORKER_CONSUMER: token.default(DEFAULT_CONSUMER),
  ASYNC_WORKER_REPLICAS: z.enum(['1', '3', '5']).default('1'),
  ASYNC_WORKER_GATEWAY_URL: url.default(DEFAULT_GATEWAY_URL),
  ASYNC_WORKER_CONCURRENCY: int(1, 256).default(DEFAULT_CONCURRENCY),
  ASYNC_WORKER_MAX_ATTEMPTS: int(1, 100).default(DEFAULT_MAX_ATTEMPTS),
  ASYNC_WORKER_RETRY_BASE_MS: int(1, 3_600_000).default(DEFAULT_RETRY_BASE_MS),
  ASYNC_WORKER_RETRY_MAX_MS: int(1, 86_400_000).default(DEFAULT_RETRY_MAX_MS),
  ASYNC_WORKER_CALL_TIMEOUT_MS: int(100, 3_600_000).default(DEFAULT_CALL_TIMEOUT_MS),
  ASYNC_WORKER_CALLBACK_ALLOW: z.string().optional(),
  ASYNC_WORKER_INTERRUPTED: z.enum(['dead-letter', 'retry']).default('dead-letter'),
  ASYNC_WORKER_STATUS_TTL_S: int(60, 31 * 86_400).default(DEFAULT_STATUS_TTL_S),
  ASYNC_WORKER_STATUS_ADDR: z
    .string()
    .trim()
    .regex(/^[^\s:[\]]+:\d{1,5}$/, 'host:port, e.g. 127.0.0.1:8093')
    .default(DEFAULT_STATUS_ADDR),
  ASYNC_WORKER_DRAIN_TIMEOUT_MS: int(0, 600_000).default(DEFAULT_DRAIN_TIMEOUT_MS),
  LOG_LEVEL: logLevel(),
});

export interface WorkerConfig {
  readonly natsServers: string[];
  readonly nkeySeedFile: string | undefined;
  readonly subject: string;
  readonly stream: string;
  readonly dlqStream: string;
  readonly dlqSubject: string;
  readonly statusBucket: string;
  readonly consumer: string;
  readonly replicas: number;
  readonly gatewayUrl: string;
  readonly concurrency: number;
  readonly maxAttempts: number;
  readonly retry: { readonly baseMs: number; readonly maxMs: number };
  readonly callTimeoutMs: number;
  /** URL prefixes an X-Callback-Url must start with (default: the gateway's /function/). */
  readonly callbackAllow: readonly string[];
  /** What to do with a call found started but unfinished (the worker died during it). */
  readonly interrupted: 'dead-letter' | 'retry';
  readonly statusTtlS: number;
  readonly statusHost: string;
  readonly statusPort: number;
  readonly drainTimeoutMs: number;
  readonly logLevel: string;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  const r = EnvSchema.safeParse(env);
  if (!r.success) {
    throw new CoordinationComponentError(ERROR_CODES.CONFIG, `invalid async worker configuration: ${configProblems(r.error)}`);
  }
  const c = r.data;
  if (c.ASYNC_WORKER_RETRY_BASE_MS > c.ASYNC_WORKER_RETRY_MAX_MS) {
    throw new CoordinationComponentError(
      ERROR_CODES.CONFIG,
      'invalid async worker configuration: ASYNC_WORKER_RETRY_BASE_MS must not exceed ASYNC_WORKER_RETRY_MAX_MS',
    );
  }
  if (c.ASYNC_WORKER_SUBJECT === c.ASYNC_WORKER_DLQ_SUBJECT) {
    throw new CoordinationComponentError(
      ERROR_CODES.CONFIG,
      'invalid async worker configuration: ASYNC_WORKER_DLQ_SUBJECT must differ from ASYNC_WORKER_SUBJECT',
    );
  }
  const gateway = c.ASYNC_WORKER_GATEWAY_URL.replace(/\/+$/, '');
  const allow = (c.ASYNC_WORKER_CALLBACK_ALLOW ?? `${gateway}/function/`)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const a of allow) {
    if (!/^https?:\/\/[^\s/]+\/\S*$/.test(a)) {
      throw new CoordinationComponentError(
        ERROR_CODES.CONFIG,
        `invalid async worker configuration: ASYNC_WORKER_CALLBACK_ALLOW entry ${JSON.stringify(a)} must be an http(s) URL prefix with a path (e.g. http://gateway:8080/function/)`,
      );
    }
  }
  const [host, port] = [c.ASYNC_WORKER_STATUS_ADDR.slice(0, c.ASYNC_WORKER_STATUS_ADDR.lastIndexOf(':')), Number(c.ASYNC_WORKER_STATUS_ADDR.split(':').pop())];
  return Object.freeze({
    natsServers: c.ASYNC_WORKER_NATS_URL.split(','),
    nkeySeedFile: c.ASYNC_WORKER_NKEY_SEED_FILE,
    subject: c.ASYNC_WORKER_SUBJECT,
    stream: c.ASYNC_WORKER_STREAM,
    dlqStream: c.ASYNC_WORKER_DLQ_STREAM,
    dlqSubject: c.ASYNC_WORKER_DLQ_SUBJECT,
    statusBucket: c.ASYNC_WORKER_STATUS_BUCKET,
    consumer: c.ASYNC_WORKER_CONSUMER,
    replicas: Number(c.ASYNC_WORKER_REPLICAS),
    gatewayUrl: gateway,
    concurrency: c.ASYNC_WORKER_CONCURRENCY,
    maxAttempts: c.ASYNC_WORKER_MAX_ATTEMPTS,
    retry: Object.freeze({ baseMs: c.ASYNC_WORKER_RETRY_BASE_MS, maxMs: c.ASYNC_WORKER_RETRY_MAX_MS }),
    callTimeoutMs: c.ASYNC_WORKER_CALL_TIMEOUT_MS,
    callbackAllow: Object.freeze(allow),
    interrupted: c.ASYNC_WORKER_INTERRUPTED,
    statusTtlS: c.ASYNC_WORKER_STATUS_TTL_S,
    statusHost: host,
    statusPort: port,
    drainTimeoutMs: c.ASYNC_WORKER_DRAIN_TIMEOUT_MS,
    logLevel: c.LOG_LEVEL,
  });
}
