/**
 * The linearizable register operations every object is built from, on one JetStream stream per
 * namespace used as a key-value store (`CRUCIAL_<namespace>`: one subject per key,
 * `crucial.<namespace>.obj.<key>`, only the last message of each kept; a delete is a message
 * with the `KV-Operation: DEL` header, as in JetStream's KV) and one counter stream for
 * `Counter`. Not a `$KV.` bucket: a leaf node with its own JetStream domain may not publish to
 * `$KV.>` on the core (nats-server denies it on domain-crossing leaf links), while these
 * subjects and the domain-mapped API reach the core from any node. Why they are linearizable:
 *
 * - A write is a publish to the key's subject with `Nats-Expected-Last-Subject-Sequence` set to
 *   the revision it was computed from (compare-and-set). JetStream orders it through the
 *   stream's Raft group: it is stored only when a quorum of replicas accepts it, and only if the
 *   key is still at that revision. Retries after a timeout reuse the message ID, so a write that
 *   did commit is recognised as a duplicate, never applied twice.
 * - Only answers that come through Raft are trusted. A "wrong last sequence" answer is not: right
 *   after a partition heals, the deposed leader of the stream still holds the stream's
 *   subscription until it hears of the new term (nats-server steps a leader that lost its quorum
 *   down only after 10-20 s), so a publish reaches both leaders, and the deposed one may answer
 *   "wrong last sequence" from its old state while the real leader stores the message. A write
 *   that got that answer is settled (`settle`) before the SDK computes and writes again: a fence
 *   with the same message ID either is stored (the write was not, and now never will be) or is a
 *   duplicate (the write was stored).
 * - A read fetches the key (from any replica, possibly stale), then proves it current: it
 *   publishes an empty marker to the key `_read` that the stream accepts only if the key's
 *   last revision is still the one read (`Nats-Expected-Last-Subject-Sequence-Subject`). The
 *   marker goes through Raft like a write, so a read that returns was current at the marker's
 *   commit; a stale follower or a deposed leader in a minority partition can never make it
 *   return an old value: without a quorum the marker never commits and the read times out.
 *
 * On the minority side of a partition every operation therefore blocks until its deadline and
 * fails with EDGE_COORDINATION_SDK_UNAVAILABLE (writes flagged `indeterminate` when they may
 * have committed); it never answers wrong. Porcupine checks histories of these operations under
 * kill -9 and partitions (coordination/lincheck, coordination/test/integration).
 */
import { backoffDelayMs, sleep } from '@syncmesh-edge/backoff';
import {
  type JetStreamClient,
  JetStreamApiError,
  type JetStreamManager,
  type JetStreamPublishOptions,
  jetstream,
  jetstreamManager,
  type StoredMsg,
} from '@nats-io/jetstream';
import { Empty, errors, headers, type NatsConnection, nuid, RequestError } from '@nats-io/nats-core';
import { COORDINATION_ERROR_CODES, CoordinationError } from './errors.js';

/** A key's value (null: absent or deleted) and its revision (0: never written). */
export interface Versioned {
  readonly value: Uint8Array | null;
  readonly revision: number;
}

export interface StoreOptions {
  /** Replicas of the bucket and the counter stream (1, 3 or 5; R3 over 3-5 core nodes). */
  readonly replicas: number;
  /** Largest value in bytes (JSON-encoded), checked before publishing. */
  readonly maxValueBytes: number;
  /** Longest single request before it is retried (with the same message ID for writes). */
  readonly attemptTimeoutMs: number;
}

/** The stream holding a namespace's objects (one subject per key). */
export const objectStreamName = (namespace: string): string => `CRUCIAL_${namespace}`;
/** The counter stream of a namespace (allow_msg_counter). */
export const counterStreamName = (namespace: string): string => `CRUCIAL_${namespace}_COUNTERS`;
/** The key the read markers are published to. */
export const READ_MARKER_KEY = '_read';

const API = { WRONG_LAST_SEQ: 10071, WRONG_LAST_SEQ_INFLIGHT: 10164, DUPLICATE_IN_PROCESS: 10158, NAME_IN_USE: 10058 } as const;
const RETRY = { baseMs: 50, maxMs: 1_000 } as const;
/** JetStream's default duplicate_window (2 min), used until the stream's own is known. */
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

/**
 * What an attempt that got no answer may have done, for the error at the deadline: `none` (reads),
 * `if-sent` (a write: indeterminate once an attempt went out), `unknown` (settling a write whose
 * fate is open: always indeterminate).
 */
type Effect = 'none' | 'if-sent' | 'unknown';

/** Is `err` a failure after which the same request may succeed (no answer, no leader yet)? */
export function isTransient(err: unknown): boolean {
  // nats.js wraps "no responders" (no stream leader yet) as JetStreamNotEnabled, with the cause
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof errors.TimeoutError || e instanceof errors.NoRespondersError || e instanceof errors.ConnectionError) return true;
    if (e instanceof RequestError && e.isNoResponders()) return true;
    if (e instanceof JetStreamApiError) return e.status === 503 || e.code === API.DUPLICATE_IN_PROCESS;
  }
  return false;
}

function isConflict(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === API.WRONG_LAST_SEQ || err.code === API.WRONG_LAST_SEQ_INFLIGHT);
}

function unavailable(what: string, timeoutMs: number, cause: unknown, indeterminate: boolean): CoordinationError {
  const why = cause instanceof Error ? cause.message : String(cause ?? 'no answer');
  return new CoordinationError(
    COORDINATION_ERROR_CODES.UNAVAILABLE,
    `${what}: no answer from a quorum of the cluster within ${timeoutMs} ms (${why})${indeterminate ? '; the write may or may not have taken effect' : ''}`,
    { cause, indeterminate },
  );
}

/** What one read-modify-write step decides: write (bytes, null: delete) or not, and its result; or an error. */
export type Step<T> = { write?: Uint8Array | null; result: T } | { error: Error };

export class Store {
  readonly stream: string;
  readonly counterStream: string;
  readonly namespace: string;
  readonly opts: StoreOptions;
  private readonly nc: NatsConnection;
  private readonly js: JetStreamClient;
  private readonly jsm: JetStreamManager;
  /** How long the streams remember a message ID (their duplicate_window): settle() trusts a fence only within it. */
  private duplicateWindowMs = DEFAULT_DUPLICATE_WINDOW_MS;

  private constructor(nc: NatsConnection, js: JetStreamClient, jsm: JetStreamManager, namespace: string, opts: StoreOptions) {
    this.nc = nc;
    this.js = js;
    this.jsm = jsm;
    this.namespace = namespace;
    this.opts = opts;
    this.stream = objectStreamName(namespace);
    this.counterStream = counterStreamName(namespace);
  }

  /** Creates (or binds to) the namespace's object stream and counter stream. */
  static async open(nc: NatsConnection, namespace: string, opts: StoreOptions, domain?: string): Promise<Store> {
    const jsOpts = domain ? { domain } : {};
    const js = jetstream(nc, { ...jsOpts, timeout: opts.attemptTimeoutMs });
    const jsm = await jetstreamManager(nc, { ...jsOpts, timeout: opts.attemptTimeoutMs });
    const store = new Store(nc, js, jsm, namespace, opts);
    const ensure = async (cfg: Parameters<JetStreamManager['streams']['add']>[0]) => {
      try {
        await jsm.streams.add(cfg);
      } catch (err) {
        // exists (perhaps with other settings, e.g. replicas): use it as it is
        if (err instanceof JetStreamApiError && err.code === API.NAME_IN_USE) return;
        if (err instanceof JetStreamApiError) {
          throw new CoordinationError(
            COORDINATION_ERROR_CODES.UNAVAILABLE,
            `namespace ${namespace}: JetStream refused stream ${cfg.name} with ${opts.replicas} replicas (${err.message}); a cluster of fewer servers takes replicas 1 (COORDINATION_REPLICAS)`,
            { cause: err },
          );
        }
        if (isTransient(err)) throw unavailable(`namespace ${namespace}: create stream ${cfg.name}`, opts.attemptTimeoutMs, err, false);
        throw err;
      }
    };
    await ensure({
      name: store.stream,
      subjects: [`crucial.${namespace}.obj.>`],
      num_replicas: opts.replicas,
      max_msgs_per_subject: 1,
      storage: 'file' as never,
      allow_direct: true,
      max_msg_size: opts.maxValueBytes + 1024,
    });
    await ensure({
      name: store.counterStream,
      subjects: [`crucial.${namespace}.counter.*`],
      allow_msg_counter: true,
      num_replicas: opts.replicas,
      max_msgs_per_subject: 1,
      storage: 'file' as never,
      allow_direct: false,
    });
    const info = await jsm.streams.info(store.stream).catch(() => null);
    const window = info?.config.duplicate_window;
    if (typeof window === 'number' && window > 0) store.duplicateWindowMs = window / 1e6; // ns
    return store;
  }

  /** The keys starting with `prefix` now, without the prefix (one replica's view: a snapshot, not linearizable). */
  async keys(prefix: string): Promise<string[]> {
    const filter = `${this.subject(prefix)}>`;
    const info = await this.jsm.streams.info(this.stream, { subjects_filter: filter });
    const out: string[] = [];
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const key = subject.slice(this.subject('').length);
      const v = await this.fetch(key, Date.now() + this.opts.attemptTimeoutMs);
      if (v.value !== null) out.push(key.slice(prefix.length));
    }
    return out.sort();
  }

  subject(key: string): string {
    return `crucial.${this.namespace}.obj.${key}`;
  }

  /** Runs `attempt` until it succeeds, fails for good, or the deadline passes (then UNAVAILABLE). */
  private async retrying<T>(what: string, deadline: number, effect: Effect, attempt: (timeoutMs: number) => Promise<T>): Promise<T> {
    let lastErr: unknown;
    for (let i = 0; ; i++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw unavailable(what, this.opts.attemptTimeoutMs, lastErr, effect === 'unknown' || (effect === 'if-sent' && lastErr !== undefined));
      try {
        return await attempt(Math.max(1, Math.min(remaining, this.opts.attemptTimeoutMs)));
      } catch (err) {
        if (!isTransient(err)) throw err;
        lastErr = err;
        await sleep(Math.min(backoffDelayMs(i, RETRY), Math.max(0, deadline - Date.now())));
      }
    }
  }

  private toVersioned(m: StoredMsg | null): Versioned {
    if (!m) return { value: null, revision: 0 };
    const op = m.header?.get('KV-Operation');
    return { value: op === 'DEL' || op === 'PURGE' ? null : m.data, revision: m.seq };
  }

  /** The key as some replica has it (not proven current; `fromLeader` asks the stream leader). */
  async fetch(key: string, deadline: number, fromLeader = false): Promise<Versioned> {
    return this.retrying(`read ${this.namespace}/${key}`, deadline, 'none', async () => {
      try {
        const m = fromLeader
          ? await this.jsm.streams.getMessage(this.stream, { last_by_subj: this.subject(key) })
          : await this.jsm.direct.getMessage(this.stream, { last_by_subj: this.subject(key) });
        return this.toVersioned(m);
      } catch (err) {
        if (err instanceof JetStreamApiError && err.code === 10037) return { value: null, revision: 0 }; // no message
        throw err;
      }
    });
  }

  /** Proves through Raft that `key` is still at `revision`: true when it is, false when it moved on. */
  async validate(key: string, revision: number, deadline: number): Promise<boolean> {
    return this.retrying(`read ${this.namespace}/${key}`, deadline, 'none', async (timeout) => {
      try {
        await this.js.publish(this.subject(READ_MARKER_KEY), Empty, {
          timeout,
          expect: { lastSubjectSequence: revision, lastSubjectSequenceSubject: this.subject(key) },
        });
        return true;
      } catch (err) {
        if (isConflict(err)) return false;
        throw err;
      }
    });
  }

  /** A linearizable read of `key`. */
  async read(key: string, deadline: number): Promise<Versioned> {
    let fromLeader = false;
    for (;;) {
      const v = await this.fetch(key, deadline, fromLeader);
      if (await this.validate(key, v.revision, deadline)) return v;
      fromLeader = true; // the replica was behind, or the key moved: ask the leader next
    }
  }

  /**
   * Compare-and-set: writes `value` (null deletes) if `key` is at `revision` (0: never written).
   * Returns the new revision, or null when the key had moved on (nothing written, and settled:
   * nothing will be).
   */
  async write(key: string, value: Uint8Array | null, revision: number, deadline: number): Promise<number | null> {
    if (value && value.length > this.opts.maxValueBytes) {
      throw new CoordinationError(
        COORDINATION_ERROR_CODES.VALUE_TOO_LARGE,
        `value of ${value.length} bytes for ${this.namespace}/${key} is larger than the ${this.opts.maxValueBytes} bytes allowed`,
      );
    }
    const msgID = nuid.next();
    const firstSent = Date.now();
    const rev = await this.retrying(`write ${this.namespace}/${key}`, deadline, 'if-sent', async (timeout) => {
      const opts: Partial<JetStreamPublishOptions> = { timeout, msgID, expect: { lastSubjectSequence: revision } };
      if (value === null) {
        const h = headers();
        h.set('KV-Operation', 'DEL');
        opts.headers = h;
      }
      try {
        const ack = await this.js.publish(this.subject(key), value ?? Empty, opts);
        return ack.seq;
      } catch (err) {
        if (isConflict(err)) return null;
        throw err;
      }
    });
    return rev !== null ? rev : this.settle(key, msgID, firstSent, deadline);
  }

  /**
   * After a "wrong last sequence" answer to the write of `key` with message ID `msgID` (see the
   * module comment: a deposed leader may have given it): the revision the write was stored at,
   * or null when it was not stored and now never will be. Publishes a fence, an empty message to
   * the read-marker key with the same message ID, and trusts only answers that come through Raft:
   * stored (not a duplicate) means the write was not, and the fence now holds its message ID so
   * no attempt of it still on its way can be stored; a duplicate means the write or an earlier
   * fence attempt (whose answer was lost) holds it, and the subject of the message at that
   * sequence tells which. When that message is gone (replaced since), or the streams may have
   * forgotten the ID (older than their duplicate window), the write's fate is not known: an
   * indeterminate UNAVAILABLE, never a guess.
   */
  private async settle(key: string, msgID: string, firstSent: number, deadline: number): Promise<number | null> {
    const what = `write ${this.namespace}/${key}`;
    const unknownFate = (why: string) =>
      new CoordinationError(COORDINATION_ERROR_CODES.UNAVAILABLE, `${what}: ${why}; the write may or may not have taken effect`, { indeterminate: true });
    return this.retrying(what, deadline, 'unknown', async (timeout) => {
      if (Date.now() - firstSent >= this.duplicateWindowMs) {
        throw unknownFate(`its conflict answer could not be settled within the stream's duplicate window (${this.duplicateWindowMs} ms)`);
      }
      const ack = await this.js.publish(this.subject(READ_MARKER_KEY), Empty, { timeout, msgID });
      if (!ack.duplicate) return null;
      let subject: string | null = null;
      try {
        subject = (await this.jsm.streams.getMessage(this.stream, { seq: ack.seq }))?.subject ?? null;
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === 10037)) throw err; // 10037: no such message (replaced)
      }
      if (subject === this.subject(key)) return ack.seq;
      if (subject === this.subject(READ_MARKER_KEY)) return null;
      throw unknownFate(`the cluster answered "wrong last sequence", yet its message ID is stored at sequence ${ack.seq}, which has been replaced since`);
    });
  }

  /**
   * Read-modify-write until it applies: `step` sees the current value and returns what to write
   * (`write`: bytes, null to delete, undefined to write nothing) and the result. A result that
   * writes nothing was decided on a value proven current, and so was a thrown error.
   */
  async modify<T>(key: string, deadline: number, step: (current: Versioned) => Step<T>): Promise<{ result: T; revision: number }> {
    let fromLeader = false;
    for (let i = 0; ; i++) {
      const cur = await this.fetch(key, deadline, fromLeader);
      const out = step(cur);
      if ('error' in out) {
        if (await this.validate(key, cur.revision, deadline)) throw out.error;
      } else if (out.write === undefined) {
        if (await this.validate(key, cur.revision, deadline)) return { result: out.result, revision: cur.revision };
      } else {
        const rev = await this.write(key, out.write, cur.revision, deadline);
        if (rev !== null) return { result: out.result, revision: rev };
      }
      fromLeader = true;
      if (Date.now() >= deadline) throw unavailable(`update ${this.namespace}/${key}`, this.opts.attemptTimeoutMs, 'contended', false);
      if (i > 0) await sleep(Math.min(backoffDelayMs(i - 1, { baseMs: 5, maxMs: 200 }), Math.max(0, deadline - Date.now())));
    }
  }

  /**
   * Waits until `key` may have changed or `untilMs` (epoch ms) passes, at most `pollMs`: a hint,
   * the caller re-reads. Any publish to the key's subject wakes it (core NATS delivers every
   * publish to subscribers, also one the stream then refuses), and the poll bound covers a
   * notification sent before the subscription existed.
   */
  async changed(key: string, untilMs: number, pollMs = 500): Promise<void> {
    const sub = this.nc.subscribe(this.subject(key), { max: 1 });
    const ac = new AbortController();
    try {
      const wait = Math.max(0, Math.min(untilMs - Date.now(), pollMs));
      const note = (async () => {
        for await (const _ of sub) return;
      })();
      await Promise.race([sleep(wait, ac.signal).catch(() => undefined), note]);
    } finally {
      ac.abort();
      sub.unsubscribe();
    }
  }

  /**
   * Adds `delta` to the counter `name` on the counter stream (JetStream's `Nats-Incr`, applied in
   * Raft order by the server) and returns the new value; delta 0 is a linearizable read.
   */
  async increment(name: string, delta: bigint, deadline: number): Promise<bigint> {
    const msgID = nuid.next();
    const subject = `crucial.${this.namespace}.counter.${name}`;
    return this.retrying(`counter ${this.namespace}/${name}`, deadline, delta !== 0n ? 'if-sent' : 'none', async (timeout) => {
      const h = headers();
      h.set('Nats-Incr', delta >= 0n ? `+${delta}` : `${delta}`);
      const ack = (await this.js.publish(subject, Empty, { timeout, msgID, headers: h })) as { val?: string; duplicate?: boolean };
      if (ack.duplicate && typeof ack.val !== 'string') {
        // a retry found the increment already stored: it happened, but its resulting value is not known
        throw new CoordinationError(
          COORDINATION_ERROR_CODES.UNAVAILABLE,
          `counter ${this.namespace}/${name}: the increment was applied (a retry after a timeout found it stored), its resulting value is unknown`,
          { indeterminate: true },
        );
      }
      if (typeof ack.val !== 'string') {
        throw new CoordinationError(
          COORDINATION_ERROR_CODES.CORRUPT,
          `counter ${this.namespace}/${name}: the server's acknowledgement has no value (is ${this.counterStream} a counter stream?)`,
        );
      }
      return BigInt(ack.val);
    });
  }
}
