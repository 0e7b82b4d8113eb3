/** One namespace of shared objects: its object and counter streams, and the objects in it. */
import type { NatsConnection } from '@nats-io/nats-core';
import { AtomicLong, AtomicMap, AtomicReference, Counter } from './atomic.js';
import { checkInteger, checkNamespace, checkObjectName } from './names.js';
import { Store } from './store.js';
import { CountDownLatch, CyclicBarrier, Future, Semaphore } from './sync.js';

/** Deadline of one operation (all its retries) when nothing else is given. */
export const DEFAULT_TIMEOUT_MS = 5_000;
/** Replicas of a namespace's streams: R3 over the 3-5 core nodes. */
export const DEFAULT_REPLICAS = 3;
/** Longest single request before it is retried. */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 2_000;
/** Largest value (JSON) of one object or map key. */
export const DEFAULT_MAX_VALUE_BYTES = 256 * 1024;

export interface CoordinationOptions {
  /** Namespace: letters, digits, _ and - (streams CRUCIAL_<namespace> and CRUCIAL_<namespace>_COUNTERS). */
  readonly namespace: string;
  /** 1, 3 or 5 (default 3). Used when the namespace is created; an existing one keeps its own. */
  readonly replicas?: number;
  /** Deadline of one operation in ms (default 5000); blocking waits take their own timeoutMs. */
  readonly timeoutMs?: number;
  readonly attemptTimeoutMs?: number;
  readonly maxValueBytes?: number;
  /** JetStream domain of the core cluster, for a client of a leaf node (e.g. "mesh"). */
  readonly domain?: string;
}

export class Coordination {
  readonly namespace: string;
  private readonly store: Store;
  private readonly timeoutMs: number;

  private constructor(store: Store, timeoutMs: number) {
    this.store = store;
    this.namespace = store.namespace;
    this.timeoutMs = timeoutMs;
  }

  /** Creates the namespace's streams if they do not exist, and binds to them. */
  static async open(nc: NatsConnection, opts: CoordinationOptions): Promise<Coordination> {
    const namespace = checkNamespace(opts.namespace);
    const replicas = opts.replicas ?? DEFAULT_REPLICAS;
    if (![1, 3, 5].includes(replicas)) checkInteger('replicas (1, 3 or 5)', Number.NaN);
    const timeoutMs = checkInteger('timeoutMs', opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, 1, 600_000);
    const store = await Store.open(
      nc,
      namespace,
      {
        replicas,
        attemptTimeoutMs: checkInteger('attemptTimeoutMs', opts.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS, 1, 600_000),
        maxValueBytes: checkInteger('maxValueBytes', opts.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES, 1, 1024 * 1024),
      },
      opts.domain,
    );
    return new Coordination(store, timeoutMs);
  }

  atomicLong(name: string): AtomicLong {
    return new AtomicLong(this.store, checkObjectName(name), this.timeoutMs);
  }
  counter(name: string): Counter {
    return new Counter(this.store, checkObjectName(name), this.timeoutMs);
  }
  atomicReference<T>(name: string): AtomicReference<T> {
    return new AtomicReference<T>(this.store, checkObjectName(name), this.timeoutMs);
  }
  atomicMap<V>(name: string): AtomicMap<V> {
    return new AtomicMap<V>(this.store, checkObjectName(name), this.timeoutMs);
  }
  countDownLatch(name: string, count: number): CountDownLatch {
    return new CountDownLatch(this.store, checkObjectName(name), count, this.timeoutMs);
  }
  /** A barrier of `parties`; this handle is the party `party` (default: a random id per handle). */
  cyclicBarrier(name: string, parties: number, opts: { party?: string } = {}): CyclicBarrier {
    return new CyclicBarrier(this.store, checkObjectName(name), parties, this.timeoutMs, opts.party);
  }
  /** A semaphore of `permits`; this handle is the holder `holder` (default: a random id per handle). */
  semaphore(name: string, permits: number, opts: { holder?: string } = {}): Semaphore {
    return new Semaphore(this.store, checkObjectName(name), permits, this.timeoutMs, opts.holder);
  }
  future<T>(name: string): Future<T> {
    return new Future<T>(this.store, checkObjectName(name), this.timeoutMs);
  }
}
