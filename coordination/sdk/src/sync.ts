/**
 * CRUCIAL's synchronization objects: CountDownLatch, CyclicBarrier, Semaphore and Future, each
 * one key of the namespace's object stream changed only by compare-and-set (store.ts), so every state
 * change is linearizable: a barrier round is released exactly once, by the last party's write;
 * a semaphore's holders never add up to more than its permits. A waiter re-reads the key when
 * it changes (or every half second) until its condition holds or its timeout passes
 * (EDGE_COORDINATION_SDK_TIMEOUT). In a partition the minority side cannot write or prove a
 * read, so it blocks until the timeout and fails; it never releases a barrier or admits a holder
 * on its own.
 */
import { randomUUID } from 'node:crypto';
import { decodeJson, encodeJson } from './codec.js';
import { COORDINATION_ERROR_CODES, CoordinationError } from './errors.js';
import { checkInteger, checkTimeout } from './names.js';
import { SharedObject } from './atomic.js';
import type { Step, Store, Versioned } from './store.js';

const E = COORDINATION_ERROR_CODES;
/** Longest wait between two reads of a key a waiter watches. */
const WAIT_POLL_MS = 500;

function timeout(what: string, ms: number): CoordinationError {
  return new CoordinationError(E.TIMEOUT, `${what}: not done within ${ms} ms`);
}

/**
 * A sized object's state in `v`: `empty` when the key holds none; EDGE_COORDINATION_SDK_MISMATCH
 * (`mismatch(stored size)`) when it was created with another size than this handle was opened with.
 */
function decodeSized<S>(v: Versioned, where: string, empty: S, size: (s: S) => number, mismatch: (stored: number) => string): S {
  if (v.value === null) return empty;
  const s = decodeJson<S>(v.value, where);
  if (size(s) !== size(empty)) throw new CoordinationError(E.MISMATCH, mismatch(size(s)));
  return s;
}

/** A compare-and-set step on the state decoded from `cur`: a state that does not decode is the step's error. */
function stepOn<S, T>(cur: Versioned, decode: (v: Versioned) => S, step: (s: S) => Step<T>): Step<T> {
  let s: S;
  try {
    s = decode(cur);
  } catch (err) {
    return { error: err as Error };
  }
  return step(s);
}

/** Reads `key` until `done` returns a result (for a condition that, once true, stays true) or `timeoutMs` passes. */
async function waitUntil<T>(
  store: Store,
  key: string,
  timeoutMs: number,
  opTimeoutMs: number,
  what: string,
  done: (v: Versioned) => T | undefined,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    // Every condition waited for is monotonic (a round released, a latch at 0, a future set)
    // and every replica holds only committed state, so a condition seen true on any replica
    // has happened: no proof through Raft is needed to return (it is while it is false).
    const v = await store.fetch(key, Math.max(until, Date.now() + opTimeoutMs));
    const r = done(v);
    if (r !== undefined) return r;
    if (Date.now() >= until) throw timeout(what, timeoutMs);
    await store.changed(key, until, WAIT_POLL_MS);
  }
}

interface LatchState {
  initial: number;
  count: number;
}

/** Counts down from `count` to 0; await() returns once it is 0. Counting below 0 is an error. */
export class CountDownLatch extends SharedObject {
  constructor(
    store: Store,
    name: string,
    readonly initial: number,
    timeoutMs: number,
  ) {
    super(store, name, timeoutMs, 'CountDownLatch', 'latch');
    checkInteger('count', initial, 0, 1_000_000_000);
  }
  private state(v: Versioned): LatchState {
    const empty = { initial: this.initial, count: this.initial };
    return decodeSized(
      v,
      this.where,
      empty,
      (s) => s.initial,
      (n) => `${this.where} exists with count ${n}, opened with ${this.initial}`,
    );
  }
  /** Counts down by one and returns the count left; EDGE_COORDINATION_SDK_LATCH_BELOW_ZERO at 0. */
  async countDown(): Promise<number> {
    const r = await this.store.modify<number>(this.key, Date.now() + this.timeoutMs, (cur) =>
      stepOn<LatchState, number>(
        cur,
        (v) => this.state(v),
        (s) => {
          if (s.count === 0) return { error: new CoordinationError(E.LATCH_BELOW_ZERO, `${this.where} is already at 0: counting down would go below zero`) };
          return { write: encodeJson({ ...s, count: s.count - 1 }), result: s.count - 1 };
        },
      ),
    );
    return r.result;
  }
  async getCount(): Promise<number> {
    return this.state(await this.store.read(this.key, Date.now() + this.timeoutMs)).count;
  }
  /** Waits until the count is 0. */
  async await(opts: { timeoutMs?: number } = {}): Promise<void> {
    const ms = checkTimeout(opts.timeoutMs ?? 30_000);
    await waitUntil(this.store, this.key, ms, this.timeoutMs, `${this.where} await`, (v) => (this.state(v).count === 0 ? true : undefined));
  }
}

interface BarrierState {
  parties: number;
  generation: number;
  /** Parties arrived in this generation. */
  arrived: string[];
  /** Every distinct party that ever awaited (at most `parties`). */
  members: string[];
}

/** What one await() saw: the round it took part in, and its arrival index (parties - 1: first, 0: last, as in Java). */
export interface BarrierArrival {
  readonly generation: number;
  readonly index: number;
}

/**
 * A barrier of `parties` parties, reusable round after round. Each handle is one party (its
 * `party` id; default a random one). The last party to arrive releases the round by advancing
 * the generation: exactly one write per round. A party that times out withdraws its arrival
 * unless the round was released meanwhile.
 */
export class CyclicBarrier extends SharedObject {
  readonly party: string;
  constructor(
    store: Store,
    name: string,
    readonly parties: number,
    timeoutMs: number,
    party?: string,
  ) {
    super(store, name, timeoutMs, 'CyclicBarrier', 'barrier');
    checkInteger('parties', parties, 1, 10_000);
    this.party = party ?? randomUUID();
    if (this.party.length === 0 || this.party.length > 128) {
      throw new CoordinationError(E.BAD_ARGUMENT, `party id must be 1 to 128 characters, not ${JSON.stringify(this.party.slice(0, 40))}`);
    }
  }
  private state(v: Versioned): BarrierState {
    const empty = { parties: this.parties, generation: 0, arrived: [], members: [] };
    return decodeSized(
      v,
      this.where,
      empty,
      (s) => s.parties,
      (n) => `${this.where} was declared with ${n} parties, opened with ${this.parties}`,
    );
  }
  /** Waits until all parties of this round arrived. */
  async await(opts: { timeoutMs?: number } = {}): Promise<BarrierArrival> {
    const ms = checkTimeout(opts.timeoutMs ?? 30_000);
    const until = Date.now() + ms;
    const arrival = await this.store.modify<BarrierArrival>(this.key, Date.now() + this.timeoutMs, (cur) =>
      stepOn<BarrierState, BarrierArrival>(
        cur,
        (v) => this.state(v),
        (s) => {
          const members = s.members.includes(this.party) ? s.members : [...s.members, this.party];
          if (members.length > s.parties) {
            return {
              error: new CoordinationError(
                E.BARRIER_FULL,
                `${this.where} was declared with ${s.parties} parties and ${s.members.length} have awaited it; party ${JSON.stringify(this.party)} would be one more (reset() it to change its parties)`,
              ),
            };
          }
          if (s.arrived.includes(this.party)) {
            return {
              error: new CoordinationError(E.BARRIER_DOUBLE_AWAIT, `party ${JSON.stringify(this.party)} already awaits round ${s.generation} of ${this.where}`),
            };
          }
          const arrived = [...s.arrived, this.party];
          const index = s.parties - arrived.length;
          const next = arrived.length === s.parties ? { ...s, members, generation: s.generation + 1, arrived: [] } : { ...s, members, arrived };
          return { write: encodeJson(next), result: { generation: s.generation, index } };
        },
      ),
    );
    const mine = arrival.result;
    if (mine.index === 0) return mine; // this party released the round
    try {
      await waitUntil(this.store, this.key, Math.max(0, until - Date.now()), this.timeoutMs, `${this.where} await`, (v) =>
        this.state(v).generation > mine.generation ? true : undefined,
      );
      return mine;
    } catch (err) {
      if (!(err instanceof CoordinationError && err.code === E.TIMEOUT)) throw err;
      // withdraw, unless the round was released meanwhile
      const w = await this.store.modify(this.key, Date.now() + this.timeoutMs, (cur) => {
        const s = this.state(cur);
        if (s.generation > mine.generation) return { result: 'released' as const };
        return { write: encodeJson({ ...s, arrived: s.arrived.filter((p) => p !== this.party) }), result: 'withdrawn' as const };
      });
      if (w.result === 'released') return mine;
      throw err;
    }
  }
  /** The round now being gathered (0 before the first release). */
  async generation(): Promise<number> {
    return this.state(await this.store.read(this.key, Date.now() + this.timeoutMs)).generation;
  }
  /** Forgets the barrier (its members and round): a later await starts afresh, with any parties. */
  async reset(): Promise<void> {
    await this.store.modify(this.key, Date.now() + this.timeoutMs, (cur) => (cur.value === null ? { result: undefined } : { write: null, result: undefined }));
  }
}

interface SemaphoreState {
  permits: number;
  holders: Record<string, number>;
}

/**
 * A counting semaphore of `permits` permits. Each handle is one holder (its `holder` id). A
 * holder that dies keeps its permits until someone calls forceRelease(holder).
 */
export class Semaphore extends SharedObject {
  readonly holder: string;
  constructor(
    store: Store,
    name: string,
    readonly permits: number,
    timeoutMs: number,
    holder?: string,
  ) {
    super(store, name, timeoutMs, 'Semaphore', 'sem');
    checkInteger('permits', permits, 1, 1_000_000);
    this.holder = holder ?? randomUUID();
  }
  private state(v: Versioned): SemaphoreState {
    const empty = { permits: this.permits, holders: {} };
    return decodeSized(
      v,
      this.where,
      empty,
      (s) => s.permits,
      (n) => `${this.where} exists with ${n} permits, opened with ${this.permits}`,
    );
  }
  private static used(s: SemaphoreState): number {
    return Object.values(s.holders).reduce((a, b) => a + b, 0);
  }
  /** Takes `n` permits if free now; true when it did. */
  async tryAcquire(n = 1): Promise<boolean> {
    checkInteger('permits to acquire', n, 1, this.permits);
    return (
      await this.store.modify<boolean>(this.key, Date.now() + this.timeoutMs, (cur) =>
        stepOn<SemaphoreState, boolean>(
          cur,
          (v) => this.state(v),
          (s) => {
            if (Semaphore.used(s) + n > s.permits) return { result: false };
            return { write: encodeJson({ ...s, holders: { ...s.holders, [this.holder]: (s.holders[this.holder] ?? 0) + n } }), result: true };
          },
        ),
      )
    ).result;
  }
  /** Waits until `n` permits are free and takes them. */
  async acquire(n = 1, opts: { timeoutMs?: number } = {}): Promise<void> {
    const ms = checkTimeout(opts.timeoutMs ?? 30_000);
    const until = Date.now() + ms;
    for (;;) {
      if (await this.tryAcquire(n)) return;
      if (Date.now() >= until) throw timeout(`${this.where} acquire ${n}`, ms);
      await this.store.changed(this.key, until, WAIT_POLL_MS);
    }
  }
  /** Gives back `n` permits this holder holds (EDGE_COORDINATION_SDK_NOT_HELD if it holds fewer). */
  async release(n = 1): Promise<void> {
    checkInteger('permits to release', n, 1, this.permits);
    await this.forceRelease(this.holder, n);
  }
  /** Gives back `n` permits (default: all) of `holder`, e.g. one that died. */
  async forceRelease(holder: string, n?: number): Promise<void> {
    await this.store.modify(this.key, Date.now() + this.timeoutMs, (cur) =>
      stepOn<SemaphoreState, undefined>(
        cur,
        (v) => this.state(v),
        (s) => {
          const held = s.holders[holder] ?? 0;
          const give = n ?? held;
          if (give > held || held === 0) {
            return {
              error: new CoordinationError(E.NOT_HELD, `${this.where}: holder ${JSON.stringify(holder)} holds ${held} permits, cannot release ${give}`),
            };
          }
          const holders = { ...s.holders };
          if (held === give) delete holders[holder];
          else holders[holder] = held - give;
          return { write: encodeJson({ ...s, holders }), result: undefined };
        },
      ),
    );
  }
  /** Permits free now. */
  async availablePermits(): Promise<number> {
    const s = this.state(await this.store.read(this.key, Date.now() + this.timeoutMs));
    return s.permits - Semaphore.used(s);
  }
}

/** A value set once; get() waits for it. */
export class Future<T> extends SharedObject {
  constructor(store: Store, name: string, timeoutMs: number) {
    super(store, name, timeoutMs, 'Future', 'future');
  }
  /** Completes the future; EDGE_COORDINATION_SDK_ALREADY_SET if it was. */
  async complete(value: T): Promise<void> {
    const bytes = encodeJson({ value });
    await this.store.modify(this.key, Date.now() + this.timeoutMs, (cur) =>
      cur.value === null ? { write: bytes, result: undefined } : { error: new CoordinationError(E.ALREADY_SET, `${this.where} is already complete`) },
    );
  }
  async isDone(): Promise<boolean> {
    return (await this.store.read(this.key, Date.now() + this.timeoutMs)).value !== null;
  }
  /** Waits for the value. */
  async get(opts: { timeoutMs?: number } = {}): Promise<T> {
    const ms = checkTimeout(opts.timeoutMs ?? 30_000);
    return waitUntil(this.store, this.key, ms, this.timeoutMs, `${this.where} get`, (v) =>
      v.value === null ? undefined : decodeJson<{ value: T }>(v.value, this.where).value,
    );
  }
}
