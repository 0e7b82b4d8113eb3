/**
 * The agent's side of the peer protocol as pure functions (no sockets, no timers): what a Hello
 * means, which address a peer advertises, how a fetch and the repair messages (digest,
 * digest_keys, want) are answered from the local state. The message flow itself is drawn in
 * sync/protocol.ts; the objects that hold sockets (peers.ts, replicator.ts, restore.ts) call these.
 */
import { answerDigest, answerDigestKeys, answerWant } from '../sync/protocol.js';
import type { Digest, DigestKeys, FetchRequest, FetchResponse, Hello, PeerMessage, Want } from '../sync/messages.js';
import { toWire, type ReplicaState, type WireEntry } from '../sync/state.js';

/** What a Hello received on a link authenticated as `authId` means to the agent `selfId`. */
export type HelloVerdict = 'impostor' | 'self' | 'peer';

export function helloVerdict(hello: Pick<Hello, 'node_id'>, authId: string | undefined, selfId: string): HelloVerdict {
  // The handshake authenticated another id than the one this Hello claims.
  if (hello.node_id !== authId) return 'impostor';
  // We dialled ourselves (our own address in the static list or in mDNS answers).
  if (hello.node_id === selfId) return 'self';
  return 'peer';
}

/**
 * The peer's advertised address; a wildcard host is replaced by the address it connected from
 * (known only on an inbound link: `linkAddress` is then the peer's socket address).
 */
export function advertisedAddress(advertised: string, linkKind: 'in' | 'out', linkAddress: string): string {
  if (!advertised) return '';
  const m = /^(0\.0\.0\.0|\[::\]|::):(\d+)$/.exec(advertised);
  if (!m) return advertised;
  if (linkKind !== 'in') return '';
  const from = linkAddress.replace(/^ipv4:|^ipv6:/, '');
  const host = from.slice(0, from.lastIndexOf(':'));
  return host ? `${host}:${m[2]}` : '';
}

/** Functions in `now` that were not in `before` (a peer started running them: send their full state). */
export function addedFunctions(before: ReadonlySet<string>, now: readonly string[]): string[] {
  return now.filter((f) => !before.has(f));
}

/** The answer to a Fetch: one CRDT, or (name '') every CRDT of an object. */
export function fetchAnswer(state: ReplicaState, req: FetchRequest): FetchResponse {
  const entries: WireEntry[] = [];
  if (req.name) {
    const e = state.get(req.function, req.object, req.name);
    if (e) entries.push(toWire(req.object, req.name, e));
  } else {
    for (const [name, e] of state.objectEntries(req.function, req.object) ?? []) entries.push(toWire(req.object, name, e));
  }
  return { id: req.id, entries };
}

/** The repair messages (anti-entropy), by the name of their oneof field. */
export type RepairMessage = { kind: 'digest'; digest: Digest } | { kind: 'digest_keys'; digest_keys: DigestKeys } | { kind: 'want'; want: Want };

/** The replies a repair message calls for, in sending order. */
export function answerRepair(state: ReplicaState, m: RepairMessage, chunkBytes: number): PeerMessage[] {
  switch (m.kind) {
    case 'digest': {
      const reply = answerDigest(state, m.digest);
      return reply ? [{ digest_keys: reply }] : [];
    }
    case 'digest_keys': {
      const r = answerDigestKeys(state, m.digest_keys, chunkBytes);
      const out: PeerMessage[] = r.updates.map((u) => ({ updates: u }));
      if (r.want) out.push({ want: r.want });
      return out;
    }
    case 'want':
      return answerWant(state, m.want, chunkBytes).map((u) => ({ updates: u }));
  }
}

/** Up to n (at least 1) distinct elements of xs, chosen uniformly at random. */
export function pickRandom<T>(xs: readonly T[], n: number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, Math.max(1, n));
}
