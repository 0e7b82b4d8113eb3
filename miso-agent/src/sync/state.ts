/**
 * The replicated state of one agent: for each function, objects holding named CRDTs.
 * Pure (no I/O): the agent, the persistence and the peer protocol all go through it.
 *
 * Each (function, object, name) holds an entry (type, gen, state):
 *  - `state` is an element of the CRDT type's lattice, or null = bottom (deleted or not yet
 *    written at this generation);
 *  - `gen` is the deletion generation: deleting sets gen+1 and state null, so a delete wins
 *    over operations concurrent with it, and a later operation re-creates the CRDT at the new
 *    generation (possibly with another type);
 *  - two entries merge by (gen, state) lexicographically: the higher gen wins outright, equal
 *    gens join their states. Two nodes that concurrently create the same name with different
 *    types at the same gen both keep the type whose name sorts first (the other state is
 *    dropped): deterministic, so still convergent.
 * This product of lattices is itself a join-semilattice, which is what makes deltas, full
 * states and digests interchangeable on the wire.
 */
import { createHash } from 'node:crypto';
import { digest as crdtDigest, getCrdtType, type CrdtType, type CrdtTypeName } from '../crdt/index.js';
import { MisoError } from '../errors.js';

// The registry holds types of different state shapes; the agent handles states opaquely.
// biome-ignore lint/suspicious/noExplicitAny: states are opaque to the agent
export type AnyCrdt = CrdtType<any, any, any>;

export interface Entry {
  type: CrdtTypeName;
  gen: number;
  /** null: bottom at this generation (deleted, or a tombstone not yet re-created). */
  state: unknown;
  /** Cached digest of (gen, type, state); cleared on change. */
  digest?: string | undefined;
}

/** An entry as it travels and is stored: the state encoded by the CRDT module. */
export interface WireEntry {
  object: string;
  name: string;
  type: string;
  gen: number;
  /** Empty = bottom. */
  state: Uint8Array;
}

export function crdtOf(type: string): AnyCrdt {
  return getCrdtType(type) as AnyCrdt;
}

export function keyOf(fn: string, object: string, name: string): string {
  return `${fn}\u0000${object}\u0000${name}`;
}

export class ReplicaState {
  /** fn -> object -> name -> entry */
  private readonly fns = new Map<string, Map<string, Map<string, Entry>>>();
  private readonly roots = new Map<string, string>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  functions(): string[] {
    return [...this.fns.keys()];
  }

  get(fn: string, object: string, name: string): Entry | undefined {
    return this.fns.get(fn)?.get(object)?.get(name);
  }

  /** Every entry of an object (including tombstones). */
  objectEntries(fn: string, object: string): Map<string, Entry> | undefined {
    return this.fns.get(fn)?.get(object);
  }

  *objects(fn: string): IterableIterator<[string, Map<string, Entry>]> {
    const objs = this.fns.get(fn);
    if (objs) yield* objs.entries();
  }

  *entries(fn: string): IterableIterator<[string, string, Entry]> {
    const objs = this.fns.get(fn);
    if (!objs) return;
    for (const [object, names] of objs) for (const [name, e] of names) yield [object, name, e];
  }

  private put(fn: string, object: string, name: string, e: Entry): void {
    let objs = this.fns.get(fn);
    if (!objs) this.fns.set(fn, (objs = new Map()));
    let names = objs.get(object);
    if (!names) objs.set(object, (names = new Map()));
    if (!names.has(name)) this.count++;
    e.digest = undefined;
    names.set(name, e);
    this.roots.delete(fn);
  }

  private touched(fn: string, e: Entry): void {
    e.digest = undefined;
    this.roots.delete(fn);
  }

  /**
   * Applies a local operation. Creates the CRDT with `type` when missing or deleted.
   * Returns the delta to replicate (an entry of the same gen holding only the change).
   * Throws EDGE_MISO_WRONG_TYPE when the name holds another type, CrdtError on a bad op.
   */
  applyLocal(fn: string, object: string, name: string, type: string, op: unknown, replica: string): { entry: Entry; delta: Entry } {
    const t = crdtOf(type);
    const e = this.get(fn, object, name);
    if (e && e.state !== null && e.type !== t.name) {
      throw wrongType(fn, object, name, e.type, t.name);
    }
    // apply() validates the op; nothing changes here unless it succeeds.
    const base = e && e.state !== null ? e.state : t.empty();
    const [next, delta] = t.apply(base, op, replica) as [unknown, unknown];
    if (!e) {
      const created: Entry = { type: t.name, gen: 0, state: next };
      this.put(fn, object, name, created);
      return { entry: created, delta: { type: t.name, gen: 0, state: delta } };
    }
    e.type = t.name;
    e.state = next;
    this.touched(fn, e);
    return { entry: e, delta: { type: t.name, gen: e.gen, state: delta } };
  }

  /** Deletes one CRDT; returns the tombstone to replicate (undefined when nothing to delete). */
  deleteLocal(fn: string, object: string, name: string): Entry | undefined {
    const e = this.get(fn, object, name);
    if (!e || e.state === null) return undefined;
    e.gen += 1;
    e.state = null;
    this.touched(fn, e);
    return { type: e.type, gen: e.gen, state: null };
  }

  /**
   * Joins an entry (state, delta or tombstone) received from a peer or loaded from disk.
   * Returns true when the local entry changed.
   */
  merge(fn: string, object: string, name: string, incoming: Entry): boolean {
    const e = this.get(fn, object, name);
    if (!e) {
      this.put(fn, object, name, { type: incoming.type, gen: incoming.gen, state: incoming.state });
      return true;
    }
    if (incoming.gen < e.gen) return false;
    if (incoming.gen > e.gen) {
      e.gen = incoming.gen;
      e.type = incoming.type;
      e.state = incoming.state;
      this.touched(fn, e);
      return true;
    }
    if (incoming.state === null) return false;
    if (e.state === null) {
      e.type = incoming.type;
      e.state = incoming.state;
      this.touched(fn, e);
      return true;
    }
    if (e.type !== incoming.type) {
      // Concurrent creation with two types at one generation: the first type name wins.
      if (incoming.type < e.type) {
        e.type = incoming.type;
        e.state = incoming.state;
        this.touched(fn, e);
        return true;
      }
      return false;
    }
    const t = crdtOf(e.type);
    const joined = t.join(e.state, incoming.state) as unknown;
    if (t.equals(joined, e.state)) return false;
    e.state = joined;
    this.touched(fn, e);
    return true;
  }

  /** Digest of one entry (cached). */
  entryDigest(e: Entry): string {
    if (e.digest === undefined) {
      e.digest = e.state === null ? `${e.gen}:-` : `${e.gen}:${e.type}:${crdtDigest(e.type, e.state)}`;
    }
    return e.digest;
  }

  /** Hash over every entry of a function (for anti-entropy); cached until something changes. */
  rootDigest(fn: string): string {
    let r = this.roots.get(fn);
    if (r !== undefined) return r;
    const rows: string[] = [];
    for (const [object, name, e] of this.entries(fn)) rows.push(`${object}\u0000${name}\u0000${this.entryDigest(e)}`);
    rows.sort();
    const h = createHash('sha256');
    for (const row of rows) h.update(row).update('\n');
    r = h.digest('base64url').slice(0, 22);
    this.roots.set(fn, r);
    return r;
  }

  countOf(fn: string): number {
    let n = 0;
    for (const [, names] of this.objects(fn)) n += names.size;
    return n;
  }
}

export function wrongType(fn: string, object: string, name: string, has: string, asked: string): MisoError {
  return new MisoError(
    'EDGE_MISO_WRONG_TYPE',
    `CRDT '${name}' of object '${object}' (function '${fn}') is a ${has}, not a ${asked}; use get${typeMethod(has)}('${name}') or another name`,
  );
}

function typeMethod(type: string): string {
  const m: Record<string, string> = {
    ewflag: 'EWFlag',
    gcounter: 'GCounter',
    pncounter: 'PNCounter',
    gset: 'GSet',
    mvregister: 'MVRegister',
    orset: 'ORSet',
    lwwregister: 'LWWRegister',
    ormap: 'ORMap',
  };
  return m[type] ?? type;
}

/** Encodes an entry for the wire or the disk. */
export function toWire(object: string, name: string, e: Entry): WireEntry {
  return {
    object,
    name,
    type: e.type,
    gen: e.gen,
    state: e.state === null ? new Uint8Array(0) : crdtOf(e.type).encode(e.state),
  };
}

/** Decodes a wire entry; throws CrdtError on an unknown type or bad bytes. */
export function fromWire(w: WireEntry): Entry {
  const t = crdtOf(w.type);
  return { type: t.name, gen: w.gen, state: w.state.length === 0 ? null : (t.decode(w.state) as unknown) };
}
