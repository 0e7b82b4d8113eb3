/**
 * Debounced replication per (object, CRDT): local deltas to one CRDT are joined into one
 * pending delta until its deadline (first change + interval), then sent as one entry.
 * An interval of 0 flushes on the next turn of the event loop. Pure: the agent owns the timer
 * and asks `takeDue(now)` what to send.
 *
 * The deltas of one key are joined like a binary counter (a stack of groups of 1, 2, 4, ...
 * deltas; two groups of one size join into one of twice the size), not each into one growing
 * delta: an observed-remove delta's context covers the dots it saw, so a window's joined delta
 * grows with every op, and joining each new delta into it cost O(window) per op (a 200 ms window
 * of OR-map sets: a quarter of the agent's CPU). Groups of equal size cost O(log window) per op.
 * Join is associative and commutative, so the result is the same entry.
 */
import { crdtOf, type Entry } from './state.js';

interface Pending {
  fn: string;
  object: string;
  name: string;
  /** Joined groups of deltas, sizes strictly decreasing from the bottom (see the header). */
  groups: { delta: Entry; n: number }[];
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
      this.pending.set(key, { fn, object, name, groups: [{ delta: { ...delta }, n: 1 }], deadline: now + this.intervalMs });
      return true;
    }
    const g = p.groups;
    g.push({ delta, n: 1 });
    while (g.length >= 2 && g[g.length - 1]!.n === g[g.length - 2]!.n) {
      const b = g.pop()!;
      const a = g.pop()!;
      g.push({ delta: joinEntry(a.delta, b.delta), n: a.n + b.n });
    }
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
      let delta = p.groups[p.groups.length - 1]!.delta;
      for (let i = p.groups.length - 2; i >= 0; i--) delta = joinEntry(p.groups[i]!.delta, delta);
      b.entries.push({ object: p.object, name: p.name, delta });
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
