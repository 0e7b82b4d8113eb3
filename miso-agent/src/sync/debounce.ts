/**
 * Debounced replication per (object, CRDT): local deltas to one CRDT are joined into one
 * pending delta until its deadline (first change + interval), then sent as one entry.
 * An interval of 0 flushes on the next turn of the event loop. Pure: the agent owns the timer
 * and asks `takeDue(now)` what to send.
 */
import { crdtOf, type Entry } from './state.js';

interface Pending {
  fn: string;
  object: string;
  name: string;
  delta: Entry;
  deadline: number;
}

export interface DueBatch {
  fn: string;
  entries: { object: string; name: string; delta: Entry }[];
}

export class Debouncer {
  /** Insertion order = deadline order (one interval for every key). */
  private readonly pending = new Map<string, Pending>();

  constructor(readonly intervalMs: number) {}

  get size(): number {
    return this.pending.size;
  }

  /** Adds a delta (or tombstone); returns true when this key was not pending before. */
  add(fn: string, object: string, name: string, delta: Entry, now: number): boolean {
    const key = `${fn}\u0000${object}\u0000${name}`;
    const p = this.pending.get(key);
    if (!p) {
      this.pending.set(key, { fn, object, name, delta: { ...delta }, deadline: now + this.intervalMs });
      return true;
    }
    p.delta = joinEntry(p.delta, delta);
    return false;
  }

  /** The earliest deadline, or undefined when nothing is pending. */
  nextDeadline(): number | undefined {
    for (const p of this.pending.values()) return p.deadline;
    return undefined;
  }

  /** Removes and returns everything due at `now`, grouped by function. */
  takeDue(now: number): DueBatch[] {
    const byFn = new Map<string, DueBatch>();
    for (const [key, p] of this.pending) {
      if (p.deadline > now) break;
      this.pending.delete(key);
      let b = byFn.get(p.fn);
      if (!b) byFn.set(p.fn, (b = { fn: p.fn, entries: [] }));
      b.entries.push({ object: p.object, name: p.name, delta: p.delta });
    }
    return [...byFn.values()];
  }
}

/** Join of two entries of the (gen, state) lattice (see state.ts). */
export function joinEntry(a: Entry, b: Entry): Entry {
  if (a.gen !== b.gen) return a.gen > b.gen ? a : b;
  if (a.state === null) return b;
  if (b.state === null) return a;
  if (a.type !== b.type) return a.type < b.type ? a : b;
  return { type: a.type, gen: a.gen, state: crdtOf(a.type).join(a.state, b.state) as unknown };
}
