/**
 * The async worker: runs the calls the gateway queued (`/async-function/<name>`, gateway patch
 * 0003) from a JetStream stream, through the gateway, with retries and a dead-letter stream.
 *
 * - The stream (work-queue retention) holds a call until the worker acknowledges it; the
 *   durable pull consumer remembers what was delivered, so nothing accepted is lost when the
 *   worker or nats-server restarts. A call is acknowledged only after its outcome is recorded.
 * - Each call has a status in a KV bucket (queued → running → retrying → done | dead), queryable
 *   at GET /status/<call-id>. A delivery that finds its call `done` or `dead` only acknowledges
 *   it (the worker died between recording and acknowledging): a call is never run again after
 *   it succeeded. A delivery that finds its call `running` from an earlier delivery knows the
 *   worker died during the call, which may have run: by default it is dead-lettered with reason
 *   `interrupted` (at most once); ASYNC_WORKER_INTERRUPTED=retry runs it again (at least once,
 *   for idempotent functions; they get X-Call-Id).
 * - A failed call (5xx, 429, network error, timeout) is retried after the one backoff
 *   (lib/backoff: equal jitter, base doubling to a cap) with `nak(delay)`, up to
 *   ASYNC_WORKER_MAX_ATTEMPTS; then it goes to the dead-letter stream with its reason, attempts
 *   and last error, and its status is `dead`. Other answers (2xx-4xx) are the call's result.
 * - X-Callback-Url gets the result (headers X-Call-Id, X-Function-Status, X-Function-Name,
 *   X-Duration-Seconds) only when it starts with an allowed prefix (ASYNC_WORKER_CALLBACK_ALLOW;
 *   default the gateway's /function/): no caller makes the node contact an address of its choosing.
 */
import { backoffDelayMs, sleep } from '@syncmesh-edge/backoff';
import type { Logger } from '@syncmesh-edge/log';
import { squashError } from '@syncmesh-edge/log';
import {
  AckPolicy,
  type ConsumerMessages,
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  type StreamConfig,
  StorageType,
} from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import { headers, nanos, type NatsConnection } from '@nats-io/nats-core';
import type { WorkerConfig } from './config.js';
import { ERROR_CODES } from './errors.js';

/** A queued call as the gateway publishes it (faas-provider's QueueRequest, JSON). */
export interface QueueRequest {
  Function: string;
  Method: string;
  Path?: string;
  QueryString?: string;
  Header?: Record<string, string[]>;
  Host?: string;
  /** base64 (Go's []byte in JSON) */
  Body?: string;
}

export type CallState = 'running' | 'retrying' | 'done' | 'dead';

export interface CallStatus {
  call_id: string;
  function: string;
  state: CallState;
  attempts: number;
  /** the delivery (JetStream's count) that wrote this status */
  delivery: number;
  status_code?: number;
  last_error?: string;
  next_attempt_in_ms?: number;
  dead_reason?: 'failed' | 'interrupted' | 'bad_message';
  callback?: 'none' | 'sent' | 'failed' | 'refused';
  duration_ms?: number;
  updated_at: string;
}

const FUNCTION_NAME = /^[-a-zA-Z_0-9.]{1,253}$/;
/** A call ID the status bucket can use as a key (the gateway's are UUIDs). */
export const CALL_ID = /^[A-Za-z0-9_-]{1,128}$/;
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-connection',
  'host',
  'content-length',
]);
/** Extends the ack deadline of a call in progress this often. */
const WORKING_EVERY_MS = 10_000;
const ACK_WAIT_MS = 30_000;
const STATE_RETRY = { baseMs: 100, maxMs: 2_000 } as const;

/** Is this answer of the function a failure worth retrying? */
export function retryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/** Is `url` a callback target the configuration allows? */
export function callbackAllowed(url: string, allow: readonly string[]): boolean {
  let href: string;
  try {
    href = new URL(url).href;
  } catch {
    return false;
  }
  return allow.some((prefix) => href.startsWith(prefix));
}

/** The queued request's header, case-insensitively (Go canonicalises names). */
function header(req: QueueRequest, name: string): string | undefined {
  const want = name.toLowerCase();
  for (const [k, v] of Object.entries(req.Header ?? {})) if (k.toLowerCase() === want) return v[0];
  return undefined;
}

/** Parses a queued request; null when it is not one (dead-lettered as bad_message). */
export function parseRequest(data: Uint8Array): QueueRequest | null {
  let req: unknown;
  try {
    req = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return null;
  }
  const r = req as QueueRequest;
  if (typeof r !== 'object' || r === null || typeof r.Function !== 'string' || !FUNCTION_NAME.test(r.Function)) return null;
  if (typeof r.Method !== 'string' || !/^[A-Z]{1,16}$/.test(r.Method)) return null;
  if (r.Path !== undefined && (typeof r.Path !== 'string' || (r.Path !== '' && !r.Path.startsWith('/')) || r.Path.includes('..'))) return null;
  if (r.Body !== undefined && r.Body !== null && typeof r.Body !== 'string') return null;
  return r;
}

/** The URL the worker invokes for a request: the gateway's /function/<name><path>?<query>. */
export function functionUrl(gateway: string, req: QueueRequest): string {
  const qs = req.QueryString ? `?${req.QueryString}` : '';
  return `${gateway}/function/${req.Function}${req.Path ?? ''}${qs}`;
}

export class AsyncWorker {
  private js!: JetStreamClient;
  private jsm!: JetStreamManager;
  private kv!: KV;
  private messages: ConsumerMessages | undefined;
  private inFlight = new Set<Promise<void>>();
  private stopping = false;
  private loop: Promise<void> | undefined;
  ready = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly cfg: WorkerConfig,
    private readonly log: Logger,
  ) {}

  /** Creates the streams, the status bucket and the durable consumer (kept when they exist). */
  async setup(): Promise<void> {
    const c = this.cfg;
    this.js = jetstream(this.nc);
    this.jsm = await jetstreamManager(this.nc);
    // both streams: on disk, replicated as configured, a 2-minute de-duplication window
    const durable = { storage: StorageType.File, num_replicas: c.replicas, duplicate_window: nanos(120_000) };
    await this.ensureStream({
      ...durable,
      name: c.stream,
      subjects: [c.subject],
      retention: RetentionPolicy.Workqueue,
      discard: DiscardPolicy.New,
      max_msg_size: 1024 * 1024,
    });
    await this.ensureStream({ ...durable, name: c.dlqStream, subjects: [c.dlqSubject], retention: RetentionPolicy.Limits, max_age: nanos(7 * 86_400_000) });
    this.kv = await new Kvm(this.js).create(c.statusBucket, { history: 1, replicas: c.replicas, ttl: c.statusTtlS * 1000, storage: 'file' as never });
    try {
      await this.jsm.consumers.info(c.stream, c.consumer);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === 10014)) throw err;
      await this.jsm.consumers.add(c.stream, {
        durable_name: c.consumer,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(ACK_WAIT_MS),
        max_ack_pending: c.concurrency,
        max_deliver: -1,
        filter_subject: c.subject,
      });
    }
  }

  private async ensureStream(cfg: Partial<StreamConfig> & { name: string }): Promise<void> {
    try {
      await this.jsm.streams.info(cfg.name);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === 10059)) throw err;
      await this.jsm.streams.add(cfg);
      this.log.info({ stream: cfg.name, subjects: cfg.subjects }, 'stream created');
    }
  }

  /** Starts consuming. */
  async start(): Promise<void> {
    await this.setup();
    const consumer = await this.js.consumers.get(this.cfg.stream, this.cfg.consumer);
    this.messages = await consumer.consume({ max_messages: this.cfg.concurrency });
    this.ready = true;
    this.log.info({ stream: this.cfg.stream, subject: this.cfg.subject, consumer: this.cfg.consumer }, 'async worker consuming');
    this.loop = (async () => {
      for await (const m of this.messages!) {
        if (this.stopping) {
          m.nak(); // not started: the next worker takes it at once
          continue;
        }
        while (this.inFlight.size >= this.cfg.concurrency) await Promise.race(this.inFlight);
        const p = this.handle(m)
          .catch((err) => this.log.error({ err, seq: m.seq }, 'call not finished: it is delivered again'))
          .finally(() => this.inFlight.delete(p));
        this.inFlight.add(p);
      }
    })();
  }

  /** Stops taking calls, waits up to the drain timeout for those in flight. Safe twice. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.ready = false;
    this.messages?.stop();
    const drained = Promise.all([...this.inFlight]);
    await Promise.race([drained, sleep(this.cfg.drainTimeoutMs)]);
    await this.loop?.catch(squashError); // ended by stop(); its errors were logged per call
  }

  /** A status write, retried while NATS is back within the ack deadline. */
  private async putStatus(s: CallStatus): Promise<void> {
    const deadline = Date.now() + ACK_WAIT_MS - 5_000;
    for (let i = 0; ; i++) {
      try {
        await this.kv.put(s.call_id, JSON.stringify(s));
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(backoffDelayMs(i, STATE_RETRY));
      }
    }
  }

  async status(callId: string): Promise<CallStatus | null> {
    const e = await this.kv.get(callId);
    return e && e.operation === 'PUT' ? (e.json() as CallStatus) : null;
  }

  private async handle(m: JsMsg): Promise<void> {
    const delivery = m.info.deliveryCount;
    const req = parseRequest(m.data);
    const fromHeader = req ? header(req, 'X-Call-Id') : undefined;
    const callId = fromHeader && CALL_ID.test(fromHeader) ? fromHeader : `seq-${m.seq}`;
    const base = { call_id: callId, function: req?.Function ?? '', delivery };
    if (!req) {
      await this.deadLetter(m, {
        ...base,
        attempts: 0,
        state: 'dead',
        dead_reason: 'bad_message',
        last_error: `${ERROR_CODES.BAD_MESSAGE}: not a gateway queue request`,
        updated_at: new Date().toISOString(),
      });
      return;
    }
    const prev = await this.status(callId);
    if (prev && (prev.state === 'done' || prev.state === 'dead')) {
      await m.ackAck();
      return;
    }
    let attempts = prev?.attempts ?? 0;
    if (prev?.state === 'running' && prev.delivery < delivery) {
      this.log.warn({ callId, fn: req.Function, attempts }, 'call interrupted by a worker restart');
      if (this.cfg.interrupted === 'dead-letter') {
        await this.deadLetter(m, {
          ...prev,
          ...base,
          state: 'dead',
          dead_reason: 'interrupted',
          last_error: 'the worker stopped during the call; it may have run',
          updated_at: new Date().toISOString(),
        });
        return;
      }
    }
    attempts += 1;
    await this.putStatus({ ...base, state: 'running', attempts, updated_at: new Date().toISOString() });
    const t0 = Date.now();
    const working = setInterval(() => m.working(), WORKING_EVERY_MS);
    let outcome: { status?: number; body?: Buffer; error?: string };
    try {
      outcome = await this.invoke(req, callId);
    } finally {
      clearInterval(working);
    }
    const duration = Date.now() - t0;
    const failed = outcome.error !== undefined || retryableStatus(outcome.status ?? 0);
    if (failed) {
      const lastError = outcome.error ?? `HTTP ${outcome.status}`;
      if (attempts >= this.cfg.maxAttempts) {
        this.log.warn({ callId, fn: req.Function, attempts, lastError, code: ERROR_CODES.DEAD_LETTERED }, 'call dead-lettered');
        await this.deadLetter(m, {
          ...base,
          state: 'dead',
          attempts,
          dead_reason: 'failed',
          last_error: lastError,
          ...(outcome.status ? { status_code: outcome.status } : {}),
          duration_ms: duration,
          updated_at: new Date().toISOString(),
        });
        return;
      }
      const delay = backoffDelayMs(attempts - 1, this.cfg.retry);
      this.log.info({ callId, fn: req.Function, attempts, lastError, delayMs: delay, code: ERROR_CODES.CALL_FAILED }, 'call failed, retrying');
      await this.putStatus({
        ...base,
        state: 'retrying',
        attempts,
        last_error: lastError,
        next_attempt_in_ms: delay,
        ...(outcome.status ? { status_code: outcome.status } : {}),
        updated_at: new Date().toISOString(),
      });
      m.nak(delay);
      return;
    }
    const callbackUrl = header(req, 'X-Callback-Url');
    const done: CallStatus = {
      ...base,
      state: 'done',
      attempts,
      status_code: outcome.status!,
      duration_ms: duration,
      callback: callbackUrl ? (callbackAllowed(callbackUrl, this.cfg.callbackAllow) ? 'failed' : 'refused') : 'none',
      updated_at: new Date().toISOString(),
    };
    if (done.callback === 'failed' && callbackUrl) {
      done.callback = (await this.callback(callbackUrl, req, callId, outcome.status!, outcome.body ?? Buffer.alloc(0), duration)) ? 'sent' : 'failed';
    } else if (done.callback === 'refused') {
      this.log.warn({ callId, fn: req.Function }, 'X-Callback-Url not allowed (ASYNC_WORKER_CALLBACK_ALLOW): no callback');
    }
    await this.putStatus(done);
    await m.ackAck();
  }

  private async invoke(req: QueueRequest, callId: string): Promise<{ status?: number; body?: Buffer; error?: string }> {
    const h = new Headers();
    for (const [k, vs] of Object.entries(req.Header ?? {})) {
      if (HOP_BY_HOP.has(k.toLowerCase())) continue;
      for (const v of vs) h.append(k, v);
    }
    h.set('X-Call-Id', callId);
    const body = req.Body && req.Method !== 'GET' && req.Method !== 'HEAD' ? Buffer.from(req.Body, 'base64') : undefined;
    try {
      const res = await fetch(functionUrl(this.cfg.gatewayUrl, req), {
        method: req.Method,
        headers: h,
        body,
        signal: AbortSignal.timeout(this.cfg.callTimeoutMs),
      });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    } catch (err) {
      return { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
    }
  }

  private async callback(url: string, req: QueueRequest, callId: string, status: number, body: Buffer, durationMs: number): Promise<boolean> {
    for (let i = 0; i < 3; i++) {
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: {
            'X-Call-Id': callId,
            'X-Function-Status': String(status),
            'X-Function-Name': req.Function,
            'X-Duration-Seconds': (durationMs / 1000).toFixed(3),
          },
          body,
          signal: AbortSignal.timeout(10_000),
          redirect: 'manual',
        });
        await res.body?.cancel();
        if (res.status < 500) return res.status < 300;
      } catch (err) {
        this.log.info({ callId, err: (err as Error).message }, 'callback failed');
      }
      await sleep(backoffDelayMs(i, this.cfg.retry));
    }
    return false;
  }

  /** Puts the call into the dead-letter stream (deduplicated by call ID), records it dead, terminates it. */
  private async deadLetter(m: JsMsg, s: CallStatus): Promise<void> {
    const h = headers();
    h.set('Edge-Call-Id', s.call_id);
    h.set('Edge-Function', s.function);
    h.set('Edge-Dead-Reason', s.dead_reason ?? 'failed');
    h.set('Edge-Attempts', String(s.attempts));
    if (s.last_error) h.set('Edge-Last-Error', s.last_error.slice(0, 512));
    await this.js.publish(this.cfg.dlqSubject, m.data, { msgID: `dead-${s.call_id}`, headers: h });
    await this.putStatus(s);
    m.term(s.dead_reason);
  }
}
