/**
 * The listener: for each watched collection, a reader that polls a change stream into a bounded
 * queue, and a deliverer that POSTs batches to the function and, only once the function
 * acknowledged them, stores the resume token of the last event (at-least-once, nothing lost).
 *
 * Contract (as the driver's own change stream states it): the stream resumes indefinitely
 * while resuming works. Transient failures (MongoDB or the function down) are retried with
 * capped exponential backoff with equal jitter (@syncmesh-edge/backoff); the only ways out are
 * stop() and a fatal error (classify.ts), e.g. a server without change streams.
 *
 * Every state change is one log line: "stream state" (opening, streaming, reconnecting,
 * stopped), "delivery state" (delivering, function-unavailable) and "queue state" (full: reading
 * paused / reading resumed).
 */
import { backoffDelayMs, sleep } from '@syncmesh-edge/backoff';
import { type Logger, squashError } from '@syncmesh-edge/log';
import { MongoServerError, type Collection, type Document, type MongoClient } from 'mongodb';
import { classifyError, type Verdict } from './classify.js';
import type { ListenerConfig } from './config.js';
import { createFunctionClient, type FunctionClient } from './delivery.js';
import { DeliveryError, ERROR_CODES, ListenerError } from './errors.js';
import { normaliseChange, type ChangeEnvelope, type ResumeToken, type ResyncReason } from './events.js';
import { BoundedQueue } from './queue.js';
import { createTokenStore, type TokenStore } from './tokens.js';

/**
 * Pause between polls of a stream whose server does not wait (the test server before issue 25,
 * other MongoDB-compatible servers): POLL_MIN_MS
 * while events came within the last POLL_HOT_MS (writes come in bursts, and the next one should
 * not wait for a long pause), then doubling up to config.pollMaxMs.
 */
const POLL_MIN_MS = 10;
const POLL_HOT_MS = 1_000;
/** How long MongoDB (and the test server, since issue 25) holds a getMore open waiting for events. */
export const MAX_AWAIT_TIME_MS = 1_000;
/**
 * A null tryNext() that came back faster than this means the server did not wait:
 * pause before polling again so that an idle listener does not spin a core.
 */
const SERVER_WAITED_MS = MAX_AWAIT_TIME_MS / 2;

/** What the listener needs from a change stream; the driver's ChangeStream fits. */
export interface StreamLike {
  tryNext(): Promise<Document | null>;
  readonly resumeToken: unknown;
  close(): Promise<void>;
}

export interface OpenStreamOptions {
  /** Continue after this token (also valid after an invalidate). Absent: start now. */
  startAfter?: ResumeToken;
}

export type OpenStream = (db: string, coll: string, opts: OpenStreamOptions) => StreamLike;

/** Opens real change streams with the options the listener relies on. */
export function driverStreams(client: MongoClient): OpenStream {
  return (db, coll, opts) => {
    const c: Collection = client.db(db).collection(coll);
    return c.watch([], {
      fullDocument: 'updateLookup',
      maxAwaitTimeMS: MAX_AWAIT_TIME_MS,
      ...(opts.startAfter ? { startAfter: opts.startAfter } : {}),
    });
  };
}

/** Thrown out of start() when the listener cannot go on; main.ts exits with `exitCode`. */
export class FatalListenerError extends ListenerError {
  readonly exitCode: number;
  readonly fix: string;

  constructor(verdict: Extract<Verdict, { action: 'fatal' }>, message: string, cause: unknown) {
    super(verdict.code, `${message}. How to fix: ${verdict.fix}`, { cause });
    this.name = 'FatalListenerError';
    this.exitCode = verdict.exitCode;
    this.fix = verdict.fix;
  }
}

type QueueItem = (
  | { kind: 'event'; token: ResumeToken; event: ChangeEnvelope }
  /** token: position to store once acknowledged; null = "unknown"; undefined = store nothing. */
  | { kind: 'resync'; token: ResumeToken | null | undefined; reason: ResyncReason }
  | { kind: 'skip'; token: ResumeToken }
) & {
  /** When it was read (Date.now()): the lag is the age of the oldest item not yet acknowledged. */
  readAt: number;
};

export type StreamState = 'opening' | 'streaming' | 'reconnecting' | 'stopped';
export type DeliveryState = 'delivering' | 'function-unavailable' | 'stopped';

export interface CollectionStats {
  ns: string;
  streamState: StreamState;
  deliveryState: DeliveryState;
  /** Changes read from the stream. */
  read: number;
  /** Events the function acknowledged. */
  acknowledged: number;
  batches: number;
  /** Failed delivery attempts that were retried. */
  retries: number;
  resyncs: number;
  deadLetters: number;
  queued: number;
  /** When the oldest change read but not yet acknowledged was read (ms since the epoch); null: none waits. */
  oldestUnackedAt: number | null;
}

export interface ListenerDeps {
  config: ListenerConfig;
  logger: Logger;
  /** Needed unless both `openStream` and `tokens` are given. */
  client?: MongoClient;
  openStream?: OpenStream;
  tokens?: TokenStore;
  functionClient?: FunctionClient;
  /** Seeded randomness for backoff jitter in tests. */
  random?: () => number;
  /**
   * Connects (again) before each attempt to open a stream or write state. Defaults to
   * `client.connect()`: after a failed first connect the driver leaves a closed topology behind
   * ("Topology is closed") and only an explicit connect() builds a new one.
   */
  connect?: () => Promise<unknown>;
}

class CollectionListener {
  readonly ns: string;
  private readonly queue: BoundedQueue<QueueItem>;
  private readonly log: Logger;
  private streamState: StreamState = 'opening';
  private deliveryState: DeliveryState = 'delivering';
  private unavailableSince = 0;
  /** readAt of the first item of the batch being delivered (undefined: none in flight). */
  private inFlightSince: number | undefined;
  private readonly counts = { read: 0, acknowledged: 0, batches: 0, retries: 0, resyncs: 0, deadLetters: 0 };
  private stream: StreamLike | undefined;

  constructor(
    private readonly db: string,
    private readonly coll: string,
    private readonly deps: Required<Omit<ListenerDeps, 'client'>>,
  ) {
    this.ns = `${db}.${coll}`;
    this.queue = new BoundedQueue(deps.config.queueMax);
    this.log = deps.logger.child({ module: 'listener', ns: this.ns });
  }

  stats(): CollectionStats {
    const oldestUnackedAt = this.inFlightSince ?? this.queue.peek()?.readAt ?? null;
    return { ns: this.ns, streamState: this.streamState, deliveryState: this.deliveryState, queued: this.queue.size, ...this.counts, oldestUnackedAt };
  }

  private backoff(attempt: number): number {
    const { retryBaseMs, retryMaxMs } = this.deps.config;
    return backoffDelayMs(attempt, { baseMs: retryBaseMs, maxMs: retryMaxMs, random: this.deps.random });
  }

  private setStreamState(to: StreamState, fields: Record<string, unknown> = {}): void {
    if (this.streamState === to && to !== 'reconnecting') return;
    const from = this.streamState;
    this.streamState = to;
    const level = to === 'reconnecting' ? 'warn' : 'info';
    this.log[level]({ from, to, ...fields }, `stream state: ${to}`);
  }

  private setDeliveryState(to: DeliveryState, fields: Record<string, unknown> = {}): void {
    if (this.deliveryState === to) return;
    const from = this.deliveryState;
    this.deliveryState = to;
    const level = to === 'function-unavailable' ? 'warn' : 'info';
    this.log[level]({ from, to, ...fields }, `delivery state: ${to}`);
  }

  /** Interrupts a pending tryNext() so that stop() does not wait for the server. */
  interrupt(): void {
    this.stream?.close().catch(squashError); // closing an already broken stream may fail
  }

  closeQueue(): void {
    this.queue.close();
  }

  // ---------------------------------------------------------------- reader

  async read(signal: AbortSignal): Promise<void> {
    const { config, tokens, openStream } = this.deps;
    /** Last position read (undefined: not loaded yet; null: none, start from now). */
    let position: ResumeToken | null | undefined;
    let pendingResync: ResyncReason | undefined;
    let attempt = 0;
    /** Server errors in a row while opening from the stored token (see classify.ts). */
    let resumeRefusals = 0;
    let streaming = false;

    while (!signal.aborted) {
      const resuming = position != null;
      streaming = false;
      try {
        await this.deps.connect();
        if (position === undefined) {
          const stored = await tokens.load(this.ns);
          position = stored?.token ?? null;
          if (position === null) pendingResync = 'no-position';
          this.log.info(
            { resumeToken: position, storedAt: stored?.updatedAt },
            position ? 'resuming after the stored token' : 'no stored position: starting from now and requesting a resync',
          );
          continue;
        }
        this.setStreamState('opening', { resuming });
        const stream = openStream(this.db, this.coll, position ? { startAfter: position } : {});
        this.stream = stream;
        let t0 = Date.now();
        let change = await stream.tryNext(); // runs the aggregate: resume errors surface here
        if (pendingResync) {
          // The stream is open before the resync is requested, so every write after the
          // function's snapshot also arrives as an event.
          const token = change ? undefined : ((stream.resumeToken as ResumeToken | null) ?? null);
          await this.queue.push({ kind: 'resync', token, reason: pendingResync, readAt: Date.now() }, signal);
          pendingResync = undefined;
        }
        this.setStreamState('streaming', attempt > 0 ? { afterAttempts: attempt } : {});
        attempt = 0;
        resumeRefusals = 0;
        streaming = true;
        let idleMs = POLL_MIN_MS;
        let lastChangeAt = Date.now();
        for (;;) {
          if (signal.aborted) return;
          if (change) {
            this.counts.read++;
            const n = normaliseChange(change, { db: this.db, coll: this.coll });
            position = n.token;
            if (n.kind === 'invalidate') {
              this.log.warn({ resumeToken: n.token }, 'stream invalidated (collection dropped or renamed): reopening after it');
              break;
            }
            const item: QueueItem =
              n.kind === 'event'
                ? { kind: 'event', token: n.token, event: n.event, readAt: Date.now() }
                : n.kind === 'resync'
                  ? { kind: 'resync', token: n.token, reason: n.reason, readAt: Date.now() }
                  : { kind: 'skip', token: n.token, readAt: Date.now() };
            if (n.kind === 'resync') {
              this.log.warn(
                { code: ERROR_CODES.MALFORMED_EVENT, reason: n.reason, detail: n.detail },
                'change cannot be replicated as an event: requesting a resync',
              );
            }
            await this.queue.push(item, signal, () =>
              this.log.warn({ queued: this.queue.size }, 'queue state: full, reading paused until the function catches up'),
            );
            idleMs = POLL_MIN_MS;
            lastChangeAt = Date.now();
          } else if (Date.now() - t0 < SERVER_WAITED_MS) {
            await sleep(idleMs, signal);
            if (Date.now() - lastChangeAt > POLL_HOT_MS) idleMs = Math.min(idleMs * 2, config.pollMaxMs);
          }
          t0 = Date.now();
          change = await stream.tryNext();
        }
      } catch (err) {
        if (signal.aborted) return;
        if (resuming && !streaming && err instanceof MongoServerError) resumeRefusals++;
        const verdict = classifyError(err, { resuming: resuming && !streaming, resumeRefusals });
        if (verdict.action === 'fatal') {
          throw new FatalListenerError(verdict, `change stream on ${this.ns} failed: ${(err as Error).message}`, err);
        }
        if (verdict.action === 'resync') {
          this.log.error(
            { code: verdict.code, err, resumeToken: position },
            'cannot resume: the server no longer has this position (history lost). Starting from now and requesting a full resync of the subscribers',
          );
          position = null;
          pendingResync = 'history-lost';
          resumeRefusals = 0;
          continue;
        }
        const delayMs = this.backoff(attempt++);
        this.setStreamState('reconnecting', { attempt, retryInMs: delayMs, err: (err as Error).message });
        try {
          await sleep(delayMs, signal);
        } catch (abort) {
          squashError(abort); // stop() aborted the wait: leave quietly
          return;
        }
      } finally {
        const s = this.stream;
        this.stream = undefined;
        await s?.close().catch(squashError); // the stream may already be broken; we reopen anyway
      }
    }
  }

  // ---------------------------------------------------------------- deliverer

  /** Delivers until the queue is closed and empty. `signal` aborts in-flight retries (drain deadline). */
  async deliver(signal: AbortSignal): Promise<void> {
    const { batchSize, batchWaitMs } = this.deps.config;
    for (;;) {
      const batch = await this.queue.take(batchSize, batchWaitMs, signal);
      if (batch.length === 0) return;
      await this.processBatch(batch, signal);
    }
  }

  private async processBatch(batch: QueueItem[], signal: AbortSignal): Promise<void> {
    this.inFlightSince = batch[0]?.readAt;
    try {
      await this.deliverBatch(batch, signal);
    } finally {
      this.inFlightSince = undefined;
    }
  }

  private async deliverBatch(batch: QueueItem[], signal: AbortSignal): Promise<void> {
    const { functionClient, tokens } = this.deps;
    const events: ChangeEnvelope[] = [];
    const reasons: ResyncReason[] = [];
    let position: { token: ResumeToken | null } | undefined;
    for (const item of batch) {
      if (item.kind === 'event') events.push(item.event);
      if (item.kind === 'resync' && !reasons.includes(item.reason)) reasons.push(item.reason);
      if (item.token !== undefined) position = { token: item.token };
    }

    if (events.length > 0) {
      const res = await this.withRetry('events', () => functionClient.postEvents(events, signal), signal, {
        kind: 'events',
        events,
      });
      if (res) {
        this.counts.acknowledged += events.length;
        this.log.debug({ events: events.length, applied: res.applied }, 'batch acknowledged');
      } else if (!reasons.includes('dead-letter')) {
        // The subscribers missed these events: a snapshot brings them level again (the dead
        // letter stays for inspection and `replay`). A rejected resync is not resynced again.
        reasons.push('dead-letter');
      }
    }
    // A resync snapshots the current state, so it covers the events of this batch too; it is
    // sent after them so that the function never sees an older event after the snapshot.
    for (const reason of reasons) {
      const req = { db: this.db, coll: this.coll, reason };
      this.log.warn({ reason }, 'requesting a full resync of the subscribers');
      const res = await this.withRetry('resync', () => functionClient.postResync(req, signal), signal, { kind: 'resync', resync: req });
      if (res) this.counts.resyncs++;
    }
    this.counts.batches++;
    if (position) {
      const p = position;
      await this.retryMongo('store the resume token', () => tokens.save(this.ns, p.token), signal);
    }
  }

  /**
   * Calls the function until it acknowledges (returns the result) or rejects for good (returns
   * undefined after dead-lettering). Retries everything else with backoff.
   */
  private async withRetry<T>(
    what: 'events' | 'resync',
    call: () => Promise<T>,
    signal: AbortSignal,
    letter: { kind: 'events'; events: ChangeEnvelope[] } | { kind: 'resync'; resync: Document },
  ): Promise<T | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await call();
        if (this.deliveryState === 'function-unavailable') {
          this.setDeliveryState('delivering', { downMs: Date.now() - this.unavailableSince, attempts: attempt });
        }
        return res;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        const verdict = classifyError(err);
        if (verdict.action === 'reject') {
          const status = err instanceof DeliveryError ? err.status : undefined;
          this.counts.deadLetters++;
          this.log.error(
            { code: verdict.code, status, err: (err as Error).message, what, events: letter.kind === 'events' ? letter.events.length : 0 },
            `the function rejected the ${what}: recorded in listener_dead_letters and moving on`,
          );
          await this.retryMongo(
            'record the dead letter',
            () => this.deps.tokens.deadLetter({ ns: this.ns, status, message: (err as Error).message, ...letter }),
            signal,
          );
          if (this.deliveryState === 'function-unavailable') this.setDeliveryState('delivering', { downMs: Date.now() - this.unavailableSince });
          return undefined;
        }
        if (verdict.action === 'fatal') throw new FatalListenerError(verdict, `delivering ${what} failed`, err);
        const delayMs = this.backoff(attempt);
        this.counts.retries++;
        if (this.deliveryState !== 'function-unavailable') {
          this.unavailableSince = Date.now();
          this.setDeliveryState('function-unavailable', { code: verdict.code, err: (err as Error).message, retryInMs: delayMs });
        } else {
          this.log.debug({ attempt, err: (err as Error).message, retryInMs: delayMs }, 'delivery retry');
        }
        await sleep(delayMs, signal);
      }
    }
  }

  /** Retries a write to the meta database until it works (MongoDB restarting) or is fatal. */
  private async retryMongo(what: string, op: () => Promise<void>, signal: AbortSignal): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (attempt > 0) await this.deps.connect();
        return await op();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        const verdict = classifyError(err);
        if (verdict.action === 'fatal') throw new FatalListenerError(verdict, `cannot ${what}: ${(err as Error).message}`, err);
        const delayMs = this.backoff(attempt);
        this.log.warn({ attempt, err: (err as Error).message, retryInMs: delayMs }, `cannot ${what}: retrying`);
        await sleep(delayMs, signal);
      }
    }
  }

  markStopped(): void {
    this.setStreamState('stopped');
    this.setDeliveryState('stopped');
  }
}

export interface Listener {
  /** Runs until stop() (resolves) or a fatal error (rejects with FatalListenerError). */
  run(): Promise<void>;
  /**
   * Stops reading, delivers what is queued within config.drainTimeoutMs, then returns.
   * Unacknowledged events keep their tokens unstored, so the next start delivers them.
   * Safe to call twice.
   */
  stop(): Promise<{ drained: boolean }>;
  stats(): CollectionStats[];
}

/** Builds the listener without starting it (main.ts starts it). */
export function createListener(deps: ListenerDeps): Listener {
  const { config, client } = deps;
  if ((!deps.openStream || !deps.tokens) && !client) {
    throw new ListenerError(ERROR_CODES.CONFIG, 'createListener needs a MongoClient unless openStream and tokens are both given');
  }
  const full: Required<Omit<ListenerDeps, 'client'>> = {
    config,
    logger: deps.logger,
    openStream: deps.openStream ?? driverStreams(client!),
    tokens: deps.tokens ?? createTokenStore(client!.db(config.metaDatabase)),
    functionClient:
      deps.functionClient ??
      createFunctionClient({
        functionUrl: config.functionUrl,
        meshSecret: config.meshSecret,
        nodeId: config.nodeId,
        functionNodeId: config.functionNodeId,
        timeoutMs: config.deliveryTimeoutMs,
      }),
    random: deps.random ?? Math.random,
    connect: deps.connect ?? (client ? () => client.connect() : async () => undefined),
  };
  const parts = config.collections.map((c) => new CollectionListener(config.database, c, full));
  const readAbort = new AbortController();
  const deliverAbort = new AbortController();
  const log = deps.logger.child({ module: 'listener' });
  let running: Promise<void> | undefined;
  let stopping: Promise<{ drained: boolean }> | undefined;

  function run(): Promise<void> {
    running ??= (async () => {
      log.info({ db: config.database, collections: config.collections, functionUrl: config.functionUrl, node: config.nodeId }, 'listener starting');
      const tasks = parts.flatMap((p) => [p.read(readAbort.signal).finally(() => p.closeQueue()), p.deliver(deliverAbort.signal)]);
      try {
        await Promise.all(tasks);
      } catch (err) {
        // One fatal error stops everything: stop reading and delivering at once.
        readAbort.abort(err);
        deliverAbort.abort(err);
        for (const p of parts) p.interrupt();
        await Promise.allSettled(tasks);
        if (err instanceof FatalListenerError) throw err;
        if (deliverAbort.signal.reason === err && stopping) return; // drain deadline hit during stop()
        throw err;
      } finally {
        for (const p of parts) p.markStopped();
      }
    })();
    return running;
  }

  function stop(): Promise<{ drained: boolean }> {
    stopping ??= (async () => {
      log.info({ drainTimeoutMs: config.drainTimeoutMs }, 'listener stopping: draining the queue');
      readAbort.abort(new Error('listener stopping'));
      for (const p of parts) p.interrupt();
      if (!running) return { drained: true };
      let drained = true;
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          drained = false;
          deliverAbort.abort(new Error('drain deadline reached'));
          resolve();
        }, config.drainTimeoutMs);
      });
      // run() reports its own failure to its caller. A reader stuck in connect() (MongoDB down)
      // cannot be interrupted: past the deadline, stop() returns and closing the client ends it.
      await Promise.race([running.catch(squashError), deadline]);
      clearTimeout(timer);
      const left = parts.reduce((n, p) => n + p.stats().queued, 0);
      log.info(
        { drained, unacknowledged: left },
        drained
          ? 'listener stopped: every read event was acknowledged'
          : 'listener stopped at the drain deadline: unacknowledged events will be delivered again on the next start',
      );
      return { drained };
    })();
    return stopping;
  }

  return { run, stop, stats: () => parts.map((p) => p.stats()) };
}
