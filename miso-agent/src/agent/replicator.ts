/**
 * Replication out and in: debounced deltas to the peers that run a function (MISO's
 * "replication time" is measured here), full states when a peer (re)joins or starts running a
 * function, anti-entropy digests, and merging whatever peers send. Links belong to the peer
 * table; the replies to repair messages are computed by peer-protocol.ts.
 */
import type { AgentConfig } from '../config.js';
import { squashError } from '@syncmesh-edge/log';
import type { Logger } from '@syncmesh-edge/log';
import { Debouncer } from '../sync/debounce.js';
import type { ReceivedPeerMessage, Updates } from '../sync/messages.js';
import { fullState, makeDigest } from '../sync/protocol.js';
import { fromWire, toWire, type Entry, type ReplicaState, type WireEntry } from '../sync/state.js';
import type { StateStore } from '../store/types.js';
import { encodeUpdatesBody, withSeq, type Link } from '../transport/grpc/peer-wire.js';
import type { AgentMetrics } from './metrics.js';
import { addedFunctions, answerRepair, type RepairMessage } from './peer-protocol.js';
import type { PeerRuntime, PeerTable } from './peers.js';

/** Share of the gRPC message limit used for one Updates message. */
const CHUNK_FRACTION = 0.5;

export interface ReplicatorDeps {
  config: AgentConfig;
  log: Logger;
  state: ReplicaState;
  store: StateStore;
  peers: PeerTable;
  metrics: AgentMetrics | undefined;
  now: () => number;
  /** fn -> registered function replicas on this node. */
  local: ReadonlyMap<string, ReadonlySet<string>>;
}

export class Replicator {
  readonly chunkBytes: number;
  private readonly debouncer: Debouncer;
  /** fn -> the last debounced update's send time (encode + write to every peer stream). */
  private readonly lastSend = new Map<string, { ms: number; peers: number }>();
  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private closed = false;

  constructor(private readonly d: ReplicatorDeps) {
    this.debouncer = new Debouncer(d.config.debounceMs);
    this.chunkBytes = Math.floor(d.config.maxMessageBytes * CHUNK_FRACTION);
  }

  /** The last debounced send of `fn` (for status). */
  lastSendOf(fn: string): { ms: number; peers: number } | undefined {
    return this.lastSend.get(fn);
  }

  // ---------------------------------------------------------------- out

  queue(fn: string, object: string, name: string, delta: Entry): void {
    this.debouncer.add(fn, object, name, delta, this.d.now());
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.closed) return;
    const deadline = this.debouncer.nextDeadline();
    if (deadline === undefined) return;
    const delay = deadline - this.d.now();
    if (delay <= 0) {
      this.flushTimer = setImmediate(() => this.flush());
    } else {
      this.flushTimer = setTimeout(() => this.flush(), delay);
    }
  }

  /** Sends every due debounced delta to the live peers that run its function. */
  flush(): void {
    this.flushTimer = undefined;
    const now = this.d.now();
    const { peers, state } = this.d;
    for (const batch of this.debouncer.takeDue(now)) {
      // Send time (MISO's "replication time"): encode once, write to every peer stream.
      const t0 = performance.now();
      let sentTo = 0;
      const entries = batch.entries.map((x) => {
        const whole = this.d.config.sendFullState ? state.get(batch.fn, x.object, x.name) : undefined;
        return toWire(x.object, x.name, whole ?? x.delta);
      });
      let body: Buffer | undefined;
      for (const p of peers.values()) {
        if (!p.sync.runs(batch.fn)) continue;
        const link = peers.pushLink(p);
        if (!link) continue;
        body ??= encodeUpdatesBody(batch.fn, entries);
        const bytes = link.sendEncoded(withSeq(body, p.sync.reserveSeq(performance.now())));
        sentTo++;
        peers.countSent(p, bytes, 'updates');
        p.sync.stats.deltaBytesSent += bytes;
        p.sync.activity(batch.fn, now);
      }
      if (sentTo > 0) {
        const ms = performance.now() - t0;
        this.lastSend.set(batch.fn, { ms, peers: sentTo });
        this.d.metrics?.sendTime.observe(ms);
      }
    }
    this.scheduleFlush();
  }

  /** Tells every peer which functions run here (after a register/unregister changed the set). */
  broadcastFunctions(): void {
    const functions = [...this.d.local.keys()];
    for (const p of this.d.peers.values()) {
      const link = this.d.peers.pushLink(p);
      if (link) this.d.peers.send(link, { functions: { functions } }, p);
    }
  }

  /** Our dialled stream to `p` is up: our functions as they are now, then everything we hold for its functions. */
  catchUp(p: PeerRuntime, link: Link): void {
    // A function registered while this link was still being established was not broadcast on
    // it, and the hello we sent may predate it.
    this.d.peers.send(link, { functions: { functions: [...this.d.local.keys()] } }, p);
    // Full state on (re)join: everything we hold for the functions the peer runs.
    this.sendFullState(p, link, p.sync.functions);
  }

  private sendFullState(p: PeerRuntime, link: Link, fns: Iterable<string>): void {
    for (const fn of fns) {
      if (this.d.state.countOf(fn) === 0) continue;
      for (const u of fullState(this.d.state, fn, this.chunkBytes)) this.d.peers.send(link, { updates: u }, p);
    }
  }

  /** Anti-entropy: a digest per shared function to every live peer. */
  antiEntropy(): void {
    const now = this.d.now();
    const { peers, state, local } = this.d;
    for (const p of peers.values()) {
      if (!peers.isAlive(p, now)) continue;
      const link = peers.pushLink(p);
      if (!link) continue;
      for (const fn of p.sync.functions) {
        if (state.countOf(fn) === 0 && !local.has(fn)) continue;
        // A function with deltas in flight would show a false mismatch (and cost two full
        // states); the reliable stream covers it, so repair waits for a quiet period.
        if (p.sync.busyWith(fn, now, this.d.config.antiEntropyMs) || p.sync.unacked > 0) continue;
        peers.send(link, { digest: makeDigest(state, fn) }, p);
      }
    }
  }

  // ---------------------------------------------------------------- in

  /** A message (not Hello) from a known peer. */
  onMessage(p: PeerRuntime, link: Link, body: string | undefined, m: ReceivedPeerMessage): void {
    const { peers } = this.d;
    switch (body) {
      case 'updates': {
        const u = (m as { updates: Updates }).updates;
        for (const w of u.entries) this.mergeWire(u.function, w);
        if (u.seq > 0) p.sync.activity(u.function, this.d.now());
        if (u.seq > 0) peers.send(link, { ack: { seq: u.seq } }, p);
        return;
      }
      case 'ack': {
        const lag = p.sync.acked((m as { ack: { seq: number } }).ack.seq, performance.now());
        if (lag !== undefined) this.d.metrics?.lag.observe({ peer: p.sync.nodeId }, lag);
        return;
      }
      case 'functions': {
        const fns = (m as { functions: { functions: string[] } }).functions.functions;
        const added = addedFunctions(p.sync.functions, fns);
        p.sync.functions = new Set(fns);
        const push = peers.pushLink(p);
        if (push && added.length > 0) this.sendFullState(p, push, added);
        return;
      }
      case 'digest':
      case 'digest_keys':
      case 'want': {
        const repair = { kind: body, [body]: (m as Record<string, unknown>)[body] } as RepairMessage;
        for (const reply of answerRepair(this.d.state, repair, this.chunkBytes)) peers.send(link, reply, p);
        return;
      }
      case 'heartbeat':
        return;
      default:
        this.d.log.warn({ peer: p.sync.nodeId, body }, 'unknown peer message ignored');
    }
  }

  /** Merges one entry from a peer (replication or restore); a change is written behind. */
  mergeWire(fn: string, w: WireEntry): void {
    let changed: boolean;
    try {
      changed = this.d.state.merge(fn, w.object, w.name, fromWire(w));
    } catch (err) {
      this.d.log.warn({ err, fn, object: w.object, name: w.name }, 'dropping an undecodable entry from a peer');
      return;
    }
    if (changed) {
      const p = this.d.store.changed(fn, w.object, w.name);
      // Remote changes are written behind; a failed write is logged and retried by the store.
      if (p) p.catch(squashError);
    }
  }

  /** Sends what is still debounced (unsequenced: no ack expected) and stops. Safe to call twice. */
  close(): void {
    if (this.closed) return;
    if (this.flushTimer) {
      clearTimeout(this.flushTimer as NodeJS.Timeout);
      clearImmediate(this.flushTimer as NodeJS.Immediate);
      this.flushTimer = undefined;
    }
    for (const batch of this.debouncer.takeDue(Number.POSITIVE_INFINITY)) {
      const entries = batch.entries.map((x) => toWire(x.object, x.name, x.delta));
      for (const p of this.d.peers.values()) {
        const link = p.sync.runs(batch.fn) ? this.d.peers.pushLink(p) : undefined;
        if (link) this.d.peers.send(link, { updates: { function: batch.fn, entries, seq: 0 } }, p);
      }
    }
    this.closed = true;
  }
}
