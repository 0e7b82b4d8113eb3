/**
 * The replication protocol between two agents, as pure functions of the local state
 * (no sockets): what to send for a full state, and how to answer digests and wants.
 *
 *   A (dialler)                         B
 *   Hello ------------------------->            (auth in the stream's metadata)
 *         <------------------------- Hello
 *   Updates(full state of shared fns) ->        on every (re)connect, and when B starts
 *                                               running a function A has state for
 *   Updates(deltas, seq) ---------->            after each debounce interval
 *         <------------------------- Ack(seq)   (lag = ack time - send time)
 *   Digest(fn, root) -------------->            every anti-entropy period
 *         <------------------------- DigestKeys (only when the roots differ)
 *   Updates(A's differing entries)
 *   + Want(keys B has and A lacks) ->
 *         <------------------------- Updates(wanted entries)
 *   Heartbeat --------------------->            every heartbeat period, both ways
 *
 * The stream is reliable and ordered (gRPC over HTTP/2), so deltas need no retransmission
 * while it lasts; anything lost with a broken stream is covered by the full state sent on
 * reconnect and by anti-entropy.
 */
import type { Digest, DigestKeys, Updates, Want } from './messages.js';
import { toWire, type ReplicaState, type WireEntry } from './state.js';

/** Entries per Updates message are capped by bytes so a message stays under the gRPC limit. */
export function chunkEntries(entries: WireEntry[], maxBytes: number): WireEntry[][] {
  const chunks: WireEntry[][] = [];
  let cur: WireEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    const size = e.state.length + e.object.length + e.name.length + 32;
    if (cur.length > 0 && bytes + size > maxBytes) {
      chunks.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(e);
    bytes += size;
  }
  if (cur.length > 0) chunks.push(cur);
  return chunks;
}

/** Every entry of a function (tombstones included), as Updates messages without seq. */
export function fullState(state: ReplicaState, fn: string, maxBytes: number): Updates[] {
  const wire: WireEntry[] = [];
  for (const [object, name, e] of state.entries(fn)) wire.push(toWire(object, name, e));
  return chunkEntries(wire, maxBytes).map((entries) => ({ function: fn, entries, seq: 0 }));
}

export function makeDigest(state: ReplicaState, fn: string): Digest {
  return { function: fn, root: state.rootDigest(fn), count: state.countOf(fn) };
}

/** Answer to a Digest: our key digests when the roots differ, else nothing. */
export function answerDigest(state: ReplicaState, d: Digest): DigestKeys | undefined {
  if (state.rootDigest(d.function) === d.root) return undefined;
  const keys = [];
  for (const [object, name, e] of state.entries(d.function)) keys.push({ object, name, digest: state.entryDigest(e) });
  return { function: d.function, keys };
}

/**
 * Answer to DigestKeys: our entries that differ from (or are missing at) the peer, and a Want
 * for the keys the peer has that we lack or that differ.
 */
export function answerDigestKeys(state: ReplicaState, dk: DigestKeys, maxBytes: number): { updates: Updates[]; want: Want | undefined } {
  const theirs = new Map<string, string>();
  for (const k of dk.keys) theirs.set(`${k.object}\u0000${k.name}`, k.digest);
  const send: WireEntry[] = [];
  const want: { object: string; name: string }[] = [];
  for (const [object, name, e] of state.entries(dk.function)) {
    const key = `${object}\u0000${name}`;
    const their = theirs.get(key);
    const mine = state.entryDigest(e);
    if (their !== mine) {
      send.push(toWire(object, name, e));
      if (their !== undefined) want.push({ object, name });
    }
    theirs.delete(key);
  }
  for (const key of theirs.keys()) {
    const [object, name] = key.split('\u0000') as [string, string];
    want.push({ object, name });
  }
  return {
    updates: chunkEntries(send, maxBytes).map((entries) => ({ function: dk.function, entries, seq: 0 })),
    want: want.length > 0 ? { function: dk.function, keys: want } : undefined,
  };
}

/** Answer to a Want: the wanted entries we hold. */
export function answerWant(state: ReplicaState, w: Want, maxBytes: number): Updates[] {
  const send: WireEntry[] = [];
  for (const k of w.keys) {
    const e = state.get(w.function, k.object, k.name);
    if (e) send.push(toWire(k.object, k.name, e));
  }
  return chunkEntries(send, maxBytes).map((entries) => ({ function: w.function, entries, seq: 0 }));
}
