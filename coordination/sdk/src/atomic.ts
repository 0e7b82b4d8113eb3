/**
 * The shared objects of CRUCIAL (Barcelona-Pons et al., Middleware'19): AtomicLong, Counter,
 * AtomicReference and AtomicMap. Every operation is linearizable (see store.ts): it takes effect
 * at one instant between its call and its return, as if the object lived in one place. That is
 * stronger than the MISO CRDTs (miso-agent), which are strongly eventually consistent: a CRDT
 * answers at once from the local replica, also when cut off, and replicas agree once they have
 * seen the same updates; these objects answer only with a quorum of the cluster, so during a
 * partition the minority side blocks until the deadline and fails
 * (EDGE_COORDINATION_SDK_UNAVAILABLE), it never answers with a stale or diverging value.
 */
import { decodeJson, encodeJson, sameBytes } from './codec.js';
import { COORDINATION_ERROR_CODES, CoordinationError } from './errors.js';
import { checkInteger, decodeMapKey, encodeMapKey } from './names.js';
import type { Store, Versioned } from './store.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

function longOf(v: Versioned, where: string): number {
  if (v.value === null) return 0;
  const n = Number(dec.decode(v.value));
  if (!Number.isSafeInteger(n)) throw new CoordinationError(COORDINATION_ERROR_CODES.CORRUPT, `${where} does not hold a whole number`);
  return n;
}
const longBytes = (n: number): Uint8Array => enc.encode(String(n));

function checkSum(where: string, a: number, b: number): number {
  const s = a + b;
  if (!Number.isSafeInteger(s)) {
    throw new CoordinationError(COORDINATION_ERROR_CODES.BAD_ARGUMENT, `${where}: ${a} + ${b} leaves the safe integer range`);
  }
  return s;
}

/**
 * What every shared object has: its namespace's store, its name, the deadline of one operation,
 * its key (`<kind prefix>.<name>`) and how errors name it.
 */
export abstract class SharedObject {
  protected readonly key: string;
  constructor(
    protected readonly store: Store,
    readonly name: string,
    protected readonly timeoutMs: number,
    private readonly kind: string,
    prefix: string,
  ) {
    this.key = `${prefix}.${name}`;
  }
  protected get where(): string {
    return `${this.kind} ${this.store.namespace}/${this.name}`;
  }
}

/** A linearizable 64-bit-style integer (JS safe integers) with compare-and-set; starts at 0. */
export class AtomicLong extends SharedObject {
  constructor(store: Store, name: string, timeoutMs: number) {
    super(store, name, timeoutMs, 'AtomicLong', 'long');
  }
  async get(): Promise<number> {
    return longOf(await this.store.read(this.key, Date.now() + this.timeoutMs), this.where);
  }
  async set(value: number): Promise<void> {
    checkInteger('value', value);
    await this.store.modify(this.key, Date.now() + this.timeoutMs, () => ({ write: longBytes(value), result: undefined }));
  }
  async getAndSet(value: number): Promise<number> {
    checkInteger('value', value);
    const r = await this.store.modify(this.key, Date.now() + this.timeoutMs, (cur) => ({ write: longBytes(value), result: longOf(cur, this.where) }));
    return r.result;
  }
  /** Adds `delta` and returns the new value. */
  async addAndGet(delta: number): Promise<number> {
    checkInteger('delta', delta);
    const r = await this.store.modify(this.key, Date.now() + this.timeoutMs, (cur) => {
      const next = checkSum(this.where, longOf(cur, this.where), delta);
      return { write: longBytes(next), result: next };
    });
    return r.result;
  }
  /** Adds `delta` and returns the value before. */
  async getAndAdd(delta: number): Promise<number> {
    return (await this.addAndGet(delta)) - delta;
  }
  incrementAndGet(): Promise<number> {
    return this.addAndGet(1);
  }
  decrementAndGet(): Promise<number> {
    return this.addAndGet(-1);
  }
  /** Sets `update` if the value is `expect`; true when it did. */
  async compareAndSet(expect: number, update: number): Promise<boolean> {
    checkInteger('expect', expect);
    checkInteger('update', update);
    const r = await this.store.modify<boolean>(this.key, Date.now() + this.timeoutMs, (cur) =>
      longOf(cur, this.where) === expect ? { write: longBytes(update), result: true } : { result: false },
    );
    return r.result;
  }
}

/**
 * An add-only linearizable counter: the increment is applied by the server (JetStream counter
 * stream, `Nats-Incr`), so concurrent increments never conflict or retry (AtomicLong's
 * compare-and-set loop does under contention). No set or compare-and-set.
 */
export class Counter extends SharedObject {
  constructor(store: Store, name: string, timeoutMs: number) {
    super(store, name, timeoutMs, 'Counter', 'counter');
  }
  /** Adds `delta` (any safe integer, negative too) and returns the new value. */
  async add(delta: number): Promise<number> {
    checkInteger('delta', delta);
    const v = await this.store.increment(this.name, BigInt(delta), Date.now() + this.timeoutMs);
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new CoordinationError(COORDINATION_ERROR_CODES.CORRUPT, `Counter ${this.store.namespace}/${this.name} is ${v}, outside the safe integer range`);
    }
    return Number(v);
  }
  increment(): Promise<number> {
    return this.add(1);
  }
  /** The current value (a linearizable read: an increment by 0). */
  get(): Promise<number> {
    return this.add(0);
  }
}

/** A linearizable reference to a JSON value (null: unset). Compare-and-set compares canonical JSON. */
export class AtomicReference<T> extends SharedObject {
  constructor(store: Store, name: string, timeoutMs: number) {
    super(store, name, timeoutMs, 'AtomicReference', 'ref');
  }
  async get(): Promise<T | null> {
    const v = await this.store.read(this.key, Date.now() + this.timeoutMs);
    return v.value === null ? null : decodeJson<T>(v.value, this.where);
  }
  async set(value: T): Promise<void> {
    const bytes = encodeJson(value);
    await this.store.modify(this.key, Date.now() + this.timeoutMs, () => ({ write: bytes, result: undefined }));
  }
  async getAndSet(value: T): Promise<T | null> {
    const bytes = encodeJson(value);
    const r = await this.store.modify(this.key, Date.now() + this.timeoutMs, (cur) => ({
      write: bytes,
      result: cur.value === null ? null : decodeJson<T>(cur.value, this.where),
    }));
    return r.result;
  }
  /**
   * Sets `update` if the reference holds `expect` (canonical JSON equality); `expect` null means
   * "not set yet". A non-null `expect` on a reference never set is EDGE_COORDINATION_SDK_KEY_MISSING.
   */
  async compareAndSet(expect: T | null, update: T): Promise<boolean> {
    const want = expect === null ? null : encodeJson(expect);
    const bytes = encodeJson(update);
    const r = await this.store.modify<boolean>(this.key, Date.now() + this.timeoutMs, (cur) => {
      if (want !== null && cur.value === null) {
        return {
          error: new CoordinationError(
            COORDINATION_ERROR_CODES.KEY_MISSING,
            `${this.where} is not set: compare-and-set needs an existing value (expect null to set it first)`,
          ),
        };
      }
      return sameBytes(cur.value, want) ? { write: bytes, result: true } : { result: false };
    });
    return r.result;
  }
}

/** A linearizable map of string keys to JSON values; each key is one register. */
export class AtomicMap<V> extends SharedObject {
  constructor(store: Store, name: string, timeoutMs: number) {
    super(store, name, timeoutMs, 'AtomicMap', 'map');
  }
  private keyOf(k: string): string {
    return `map.${this.name}.${encodeMapKey(k)}`;
  }
  private whereOf(k: string): string {
    return `AtomicMap ${this.store.namespace}/${this.name}[${JSON.stringify(k)}]`;
  }
  private decode(v: Versioned, k: string): V | null {
    return v.value === null ? null : decodeJson<V>(v.value, this.whereOf(k));
  }
  async get(k: string): Promise<V | null> {
    const key = this.keyOf(k);
    return this.decode(await this.store.read(key, Date.now() + this.timeoutMs), k);
  }
  /** Sets the key and returns its previous value (null: absent). */
  async put(k: string, value: V): Promise<V | null> {
    const key = this.keyOf(k);
    const bytes = encodeJson(value);
    return (await this.store.modify(key, Date.now() + this.timeoutMs, (cur) => ({ write: bytes, result: this.decode(cur, k) }))).result;
  }
  /** Sets the key only when absent; returns the value it already had, or null when it set it. */
  async putIfAbsent(k: string, value: V): Promise<V | null> {
    const key = this.keyOf(k);
    const bytes = encodeJson(value);
    return (
      await this.store.modify(key, Date.now() + this.timeoutMs, (cur) =>
        cur.value === null ? { write: bytes, result: null } : { result: this.decode(cur, k) },
      )
    ).result;
  }
  /** Removes the key and returns its value (null: it was absent). */
  async remove(k: string): Promise<V | null> {
    const key = this.keyOf(k);
    return (
      await this.store.modify(key, Date.now() + this.timeoutMs, (cur) => (cur.value === null ? { result: null } : { write: null, result: this.decode(cur, k) }))
    ).result;
  }
  /**
   * Sets `update` if the key holds `expect` (canonical JSON equality); true when it did. A key
   * that does not exist is EDGE_COORDINATION_SDK_KEY_MISSING (use putIfAbsent to create it).
   */
  async compareAndSet(k: string, expect: V, update: V): Promise<boolean> {
    const key = this.keyOf(k);
    const want = encodeJson(expect);
    const bytes = encodeJson(update);
    return (
      await this.store.modify<boolean>(key, Date.now() + this.timeoutMs, (cur) => {
        if (cur.value === null) {
          return {
            error: new CoordinationError(
              COORDINATION_ERROR_CODES.KEY_MISSING,
              `${this.whereOf(k)} does not exist: compare-and-set needs an existing key (create it with putIfAbsent)`,
            ),
          };
        }
        return sameBytes(cur.value, want) ? { write: bytes, result: true } : { result: false };
      })
    ).result;
  }
  /** The keys present now (a snapshot from one replica: not linearizable). */
  async keys(): Promise<string[]> {
    return (await this.store.keys(`map.${this.name}.`)).map(decodeMapKey);
  }
}
