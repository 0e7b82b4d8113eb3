/**
 * The MISO agent: holds this node's MISO objects, serves the SDK, replicates to the agents of
 * other nodes that run the same functions, restores missing CRDTs from them (Algorithm 2) and
 * persists its state (write-behind). It wires sync/ (pure protocol), transport/grpc/ (streams)
 * and store/ (MongoDB); the servers themselves are built in app.ts.
 */
import { crdtOf, fromWire, keyOf, ReplicaState, toWire, wrongType, type AnyCrdt, type Entry, type WireEntry } from '../sync/state.js';
import { Debouncer } from '../sync/debounce.js';
import { PeerSync } from '../sync/peer.js';
import { answerDigest, answerDigestKeys, answerWant, fullState, makeDigest } from '../sync/protocol.js';
import type { FetchRequest, FetchResponse, PeerMessage, ReceivedPeerMessage, Updates } from '../sync/messages.js';
import type { StateStore } from '../store/types.js';
import { MeshKeys } from '@syncmesh-edge/mesh-auth';
import type { LinkRefusal } from '../transport/grpc/auth.js';
import { OutboundPeer } from '../transport/grpc/peer-client.js';
import { encodeUpdatesBody, withSeq, type Link } from '../transport/grpc/peer-wire.js';
import type { CrdtValueOut, ReadOut, SdkHandlers } from '../transport/grpc/sdk-server.js';
import type { PeerHandlers } from '../transport/grpc/peer-server.js';
import type { AgentConfig, StaticPeer } from '../config.js';
import { DEFAULT_BACKOFF_MAX_MS, DEFAULT_BACKOFF_MIN_MS } from '../config.js';
import { MisoError, squashError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { AgentMetrics } from './metrics.js';

/** Share of the gRPC message limit used for one Updates message. */
const CHUNK_FRACTION = 0.5;

interface PeerRuntime {
  sync: PeerSync;
  out: OutboundPeer | undefined;
  inbound: Set<Link>;
}

export interface AgentDeps {
  config: AgentConfig;
  log: Logger;
  store: StateStore;
  metrics?: AgentMetrics | undefined;
  now?: () => number;
  /** The mesh's keys (default: derived from config.meshSecret). */
  keys?: MeshKeys;
}

export class MisoAgent implements SdkHandlers, PeerHandlers {
  nodeId = '';
  replicaId = '';
  incarnation = '';
  /** host:port other agents dial (set by app.ts once the peer server is bound). */
  advertiseAddress = '';
  readonly state = new ReplicaState();
  private readonly debouncer: Debouncer;
  private readonly peers = new Map<string, PeerRuntime>();
  /** Every dialler by address (static list, mDNS, learned from Hello). */
  private readonly dialers = new Map<string, OutboundPeer>();
  private readonly selfAddresses = new Set<string>();
  /** fn -> registered function replicas on this node. */
  private readonly local = new Map<string, Set<string>>();
  private readonly restored = new Set<string>();
  private readonly restoring = new Map<string, Promise<void>>();
  /** fn -> the last debounced update's send time (encode + write to every peer stream). */
  private readonly lastSend = new Map<string, { ms: number; peers: number }>();
  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private tickTimer: NodeJS.Timeout | undefined;
  private antiEntropyTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly log: Logger;
  private readonly cfg: AgentConfig;
  private readonly store: StateStore;
  private readonly metrics: AgentMetrics | undefined;
  private readonly now: () => number;
  private readonly chunkBytes: number;
  readonly keys: MeshKeys;

  constructor(deps: AgentDeps) {
    this.cfg = deps.config;
    this.keys = deps.keys ?? new MeshKeys(this.cfg.meshSecret);
    this.log = deps.log.child({ module: 'agent' });
    this.store = deps.store;
    this.metrics = deps.metrics;
    this.now = deps.now ?? Date.now;
    this.debouncer = new Debouncer(this.cfg.debounceMs);
    this.chunkBytes = Math.floor(this.cfg.maxMessageBytes * CHUNK_FRACTION);
  }

  /** Reads the node identity and loads the persisted state. */
  async load(): Promise<void> {
    const id = await this.store.identity(this.cfg.nodeId);
    this.nodeId = id.nodeId;
    this.incarnation = String(id.incarnation);
    // Writer id of this incarnation: a restart never reuses the counters/dots of a previous
    // run whose last writes may not have reached the disk (see README, "Replica ids").
    this.replicaId = `${id.nodeId}.${id.incarnation}`;
    let n = 0;
    for await (const p of this.store.load()) {
      try {
        this.state.merge(p.fn, p.object, p.name, fromWire(p));
        n++;
      } catch (err) {
        this.log.error({ err, fn: p.fn, object: p.object, name: p.name }, 'skipping an undecodable persisted CRDT');
      }
    }
    this.log.info({ crdts: n, replica: this.replicaId }, 'state loaded');
  }

  /** Starts timers and dials the static peers. */
  start(staticPeers: readonly StaticPeer[]): void {
    for (const a of staticPeers) this.addPeerAddress(a.address, a.nodeId);
    if (this.cfg.heartbeatMs > 0) {
      this.tickTimer = setInterval(() => this.tick(), this.cfg.heartbeatMs);
      this.tickTimer.unref();
    }
    if (this.cfg.antiEntropyMs > 0) {
      this.antiEntropyTimer = setInterval(() => this.antiEntropy(), this.cfg.antiEntropyMs);
      this.antiEntropyTimer.unref();
    }
  }

  // ---------------------------------------------------------------- discovery

  /**
   * Dials an agent at host:port (static list, mDNS, dial-back). Idempotent. `expect`: the node id
   * claimed for that address (mDNS record, `id@host:port`, the Hello of a dial-back); the link is
   * dropped unless the handshake authenticates exactly that id.
   */
  addPeerAddress(address: string, expect?: string): void {
    if (this.closed || this.dialers.has(address) || this.selfAddresses.has(address) || address === this.advertiseAddress) return;
    const d = new OutboundPeer(address, {
      nodeId: this.nodeId,
      keys: this.keys,
      expect,
      maxMessageBytes: this.cfg.maxMessageBytes,
      backoffMinMs: DEFAULT_BACKOFF_MIN_MS,
      backoffMaxMs: DEFAULT_BACKOFF_MAX_MS,
      onOpen: (link) => this.send(link, { hello: this.hello() }, undefined),
      onMessage: (link, m, bytes) => this.onMessage(link, m, bytes),
      onClose: (link, reason) => this.onClose(link, reason),
      onAuthFailure: (addr, r) => this.onAuthFailure(addr, r),
    });
    this.dialers.set(address, d);
    d.start();
  }

  /** Stops dialling an address (mDNS goodbye). Streams already open stay until they break. */
  removePeerAddress(address: string): void {
    const d = this.dialers.get(address);
    if (!d) return;
    this.dialers.delete(address);
    for (const p of this.peers.values()) if (p.out === d) p.out = undefined;
    d.stop();
  }

  private hello() {
    return { node_id: this.nodeId, address: this.advertiseAddress, functions: [...this.local.keys()], incarnation: this.incarnation };
  }

  // ---------------------------------------------------------------- SDK API

  register(fn: string, replica: string): { node_id: string; replicas: number } {
    let set = this.local.get(fn);
    const isNew = !set;
    if (!set) this.local.set(fn, (set = new Set()));
    set.add(replica);
    if (isNew) {
      this.log.info({ fn }, 'function now runs on this node');
      this.broadcastFunctions();
    }
    return { node_id: this.nodeId, replicas: set.size };
  }

  unregister(fn: string, replica: string): { replicas: number } {
    const set = this.local.get(fn);
    if (!set) return { replicas: 0 };
    set.delete(replica);
    if (set.size === 0) {
      this.local.delete(fn);
      this.log.info({ fn }, 'function no longer runs on this node');
      this.broadcastFunctions();
    }
    return { replicas: set.size };
  }

  /**
   * Applies an op. Answers synchronously on the fast path (the CRDT is here and the write is
   * behind), else with a promise: the SDK server then skips a promise and a microtask per op.
   * Throws (synchronously) on a bad op.
   */
  apply(fn: string, object: string, name: string, type: string, op: unknown, returnValue: boolean): string | Promise<string> {
    const t = crdtOf(type);
    const pending = this.ensureLocal(fn, object, name);
    if (pending) return pending.then(() => this.applyHere(t, fn, object, name, type, op, returnValue));
    return this.applyHere(t, fn, object, name, type, op, returnValue);
  }

  private applyHere(t: AnyCrdt, fn: string, object: string, name: string, type: string, op: unknown, returnValue: boolean): string | Promise<string> {
    const { entry, delta } = this.state.applyLocal(fn, object, name, type, op, this.replicaId);
    this.queue(fn, object, name, delta);
    const written = this.store.changed(fn, object, name);
    if (written) {
      // The op is already applied and queued for the peers; a failed write cannot undo that.
      // Answer with a code that says so, so that no caller retries (and double-counts) it.
      return written.then(
        () => (returnValue ? JSON.stringify(t.value(entry.state)) : ''),
        (err: unknown) => {
          throw new MisoError(
            'EDGE_MISO_NOT_DURABLE',
            `the op on '${name}' was applied and is being replicated, but persisting it failed (retried in the background); do not retry the op`,
            { cause: err },
          );
        },
      );
    }
    return returnValue ? JSON.stringify(t.value(entry.state)) : '';
  }

  /** Reads a value; synchronous on the fast path (see apply). */
  read(fn: string, object: string, name: string, type: string): ReadOut | Promise<ReadOut> {
    const t = type ? crdtOf(type) : undefined;
    const pending = this.ensureLocal(fn, object, name);
    if (pending) return pending.then(() => this.readHere(t, fn, object, name));
    return this.readHere(t, fn, object, name);
  }

  private readHere(t: AnyCrdt | undefined, fn: string, object: string, name: string): ReadOut {
    const e = this.state.get(fn, object, name);
    if (!e || e.state === null) {
      if (!t) {
        throw new MisoError('EDGE_MISO_NOT_FOUND', `object '${object}' of function '${fn}' has no CRDT '${name}'; pass a type to read it as empty`);
      }
      return { type: t.name, value_json: JSON.stringify(t.value(t.empty())), exists: false };
    }
    if (t && e.type !== t.name) throw wrongType(fn, object, name, e.type, t.name);
    return { type: e.type, value_json: JSON.stringify(crdtOf(e.type).value(e.state)), exists: true };
  }

  async readObject(fn: string, object: string): Promise<CrdtValueOut[]> {
    if (!this.state.objectEntries(fn, object)) await this.restore(fn, object, '');
    return this.valuesOf(this.state.objectEntries(fn, object));
  }

  async delete(fn: string, object: string, name: string): Promise<number> {
    if (name) {
      const pending = this.ensureLocal(fn, object, name);
      if (pending) await pending;
    } else if (!this.state.objectEntries(fn, object)) {
      await this.restore(fn, object, '');
    }
    const names = name ? [name] : [...(this.state.objectEntries(fn, object)?.keys() ?? [])];
    let deleted = 0;
    const writes: Promise<void>[] = [];
    for (const n of names) {
      const tomb = this.state.deleteLocal(fn, object, n);
      if (!tomb) continue;
      deleted++;
      this.queue(fn, object, n, tomb);
      const w = this.store.changed(fn, object, n);
      if (w) writes.push(w);
    }
    await Promise.all(writes);
    return deleted;
  }

  listObjects(fn: string): { function: string; object: string; crdts: CrdtValueOut[] }[] {
    const out = [];
    for (const f of fn ? [fn] : this.state.functions()) {
      for (const [object, names] of this.state.objects(f)) out.push({ function: f, object, crdts: this.valuesOf(names) });
    }
    return out;
  }

  private valuesOf(names: Map<string, { type: string; state: unknown }> | undefined): CrdtValueOut[] {
    const out: CrdtValueOut[] = [];
    for (const [name, e] of names ?? []) {
      if (e.state === null) continue;
      out.push({ name, type: e.type, value_json: JSON.stringify(crdtOf(e.type).value(e.state)) });
    }
    return out;
  }

  status() {
    const now = this.now();
    const peers = [...this.peers.values()].map((p) => ({
      node_id: p.sync.nodeId,
      address: p.sync.address,
      connected: this.isAlive(p, now),
      functions: [...p.sync.functions].sort(),
      bytes_sent: p.sync.stats.bytesSent,
      bytes_received: p.sync.stats.bytesReceived,
      update_bytes_sent: p.sync.stats.updateBytesSent,
      update_messages_sent: p.sync.stats.updateMessagesSent,
      delta_bytes_sent: p.sync.stats.deltaBytesSent,
      messages_sent: p.sync.stats.messagesSent,
      messages_received: p.sync.stats.messagesReceived,
      lag_last_ms: p.sync.stats.lagLastMs,
      lag_mean_ms: p.sync.stats.lagCount ? p.sync.stats.lagSumMs / p.sync.stats.lagCount : 0,
      unacked: p.sync.unacked,
      last_heard_ms_ago: now - p.sync.lastHeardMs,
    }));
    const fns = new Set([...this.local.keys(), ...this.state.functions()]);
    for (const p of this.peers.values()) for (const f of p.sync.functions) fns.add(f);
    const functions = [...fns].sort().map((f) => ({
      function: f,
      local_replicas: this.local.get(f)?.size ?? 0,
      send_last_ms: this.lastSend.get(f)?.ms ?? 0,
      send_last_peers: this.lastSend.get(f)?.peers ?? 0,
      nodes: [
        ...(this.local.has(f) ? [this.nodeId] : []),
        ...[...this.peers.values()].filter((p) => this.isAlive(p, now) && p.sync.runs(f)).map((p) => p.sync.nodeId),
      ].sort(),
    }));
    return {
      node_id: this.nodeId,
      replica_id: this.replicaId,
      peers: peers.sort((a, b) => (a.node_id < b.node_id ? -1 : 1)),
      functions,
      crdts: this.state.size,
      persist_pending: this.store.pending,
    };
  }

  // ---------------------------------------------------------------- restore (Algorithm 2)

  /** Undefined when the CRDT is here (the fast path); else a promise that restores it from peers. */
  private ensureLocal(fn: string, object: string, name: string): Promise<void> | undefined {
    if (this.state.get(fn, object, name)) return undefined;
    return this.restore(fn, object, name);
  }

  /**
   * Fetches a CRDT (or, with name '', a whole object) missing locally from live peers that run
   * the function (up to MISO_RESTORE_FANOUT of them, at random), joins what they return, then
   * lets the operation proceed. Peers that do
   * not answer within the fetch deadline are skipped: the CRDT then starts from what we have,
   * and replication merges the rest later (no operation is lost, only delayed).
   */
  private restore(fn: string, object: string, name: string): Promise<void> | undefined {
    const key = keyOf(fn, object, name);
    if (this.restored.has(key)) return undefined;
    const now = this.now();
    const candidates = [...this.peers.values()].filter((p) => p.out && this.isAlive(p, now) && p.sync.runs(fn));
    if (candidates.length === 0) return undefined;
    // A few random peers are enough (every peer running fn gets every update); asking all of
    // them would make N nodes touching a new CRDT at once cost N^2 fetches.
    const sources = pickRandom(candidates, this.cfg.restoreFanout);
    let p = this.restoring.get(key);
    if (p) return p;
    p = (async () => {
      const req = { function: fn, object, name };
      const results = await Promise.allSettled(sources.map((s) => s.out!.fetch(req, this.cfg.fetchTimeoutMs)));
      let got = 0;
      results.forEach((r, i) => {
        if (r.status === 'rejected') {
          this.metrics?.restores.inc({ result: 'error' });
          this.log.warn({ peer: sources[i]!.sync.nodeId, err: (r.reason as Error).message }, 'restore fetch failed');
          return;
        }
        this.metrics?.restores.inc({ result: 'ok' });
        for (const w of r.value.entries) {
          got++;
          this.mergeWire(fn, w);
        }
      });
      this.restored.add(key);
      this.log.debug({ fn, object, name, entries: got, peers: sources.length }, 'restored from peers');
    })().finally(() => this.restoring.delete(key));
    this.restoring.set(key, p);
    return p;
  }

  async fetch(req: FetchRequest): Promise<FetchResponse> {
    const entries: WireEntry[] = [];
    if (req.name) {
      const e = this.state.get(req.function, req.object, req.name);
      if (e) entries.push(toWire(req.object, req.name, e));
    } else {
      for (const [name, e] of this.state.objectEntries(req.function, req.object) ?? []) entries.push(toWire(req.object, name, e));
    }
    return { id: req.id, entries };
  }

  // ---------------------------------------------------------------- replication out

  private queue(fn: string, object: string, name: string, delta: Entry): void {
    this.debouncer.add(fn, object, name, delta, this.now());
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.closed) return;
    const deadline = this.debouncer.nextDeadline();
    if (deadline === undefined) return;
    const delay = deadline - this.now();
    if (delay <= 0) {
      this.flushTimer = setImmediate(() => this.flush());
    } else {
      this.flushTimer = setTimeout(() => this.flush(), delay);
    }
  }

  /** Sends every due debounced delta to the live peers that run its function. */
  flush(): void {
    this.flushTimer = undefined;
    const now = this.now();
    for (const batch of this.debouncer.takeDue(now)) {
      // Send time (MISO's "replication time"): encode once, write to every peer stream.
      const t0 = performance.now();
      let sentTo = 0;
      const entries = batch.entries.map((x) => {
        const whole = this.cfg.sendFullState ? this.state.get(batch.fn, x.object, x.name) : undefined;
        return toWire(x.object, x.name, whole ?? x.delta);
      });
      let body: Buffer | undefined;
      for (const p of this.peers.values()) {
        if (!p.sync.runs(batch.fn)) continue;
        const link = this.pushLink(p);
        if (!link) continue;
        body ??= encodeUpdatesBody(batch.fn, entries);
        const bytes = link.sendEncoded(withSeq(body, p.sync.reserveSeq(performance.now())));
        sentTo++;
        this.countSent(p, bytes, 'updates');
        p.sync.stats.deltaBytesSent += bytes;
        p.sync.activity(batch.fn, now);
      }
      if (sentTo > 0) {
        const ms = performance.now() - t0;
        this.lastSend.set(batch.fn, { ms, peers: sentTo });
        this.metrics?.sendTime.observe(ms);
      }
    }
    this.scheduleFlush();
  }

  private broadcastFunctions(): void {
    const functions = [...this.local.keys()];
    for (const p of this.peers.values()) {
      const link = this.pushLink(p);
      if (link) this.send(link, { functions: { functions } }, p);
    }
  }

  private sendFullState(p: PeerRuntime, link: Link, fns: Iterable<string>): void {
    for (const fn of fns) {
      if (this.state.countOf(fn) === 0) continue;
      for (const u of fullState(this.state, fn, this.chunkBytes)) this.send(link, { updates: u }, p);
    }
  }

  /** Anti-entropy: a digest per shared function to every live peer. */
  antiEntropy(): void {
    const now = this.now();
    for (const p of this.peers.values()) {
      if (!this.isAlive(p, now)) continue;
      const link = this.pushLink(p);
      if (!link) continue;
      for (const fn of p.sync.functions) {
        if (this.state.countOf(fn) === 0 && !this.local.has(fn)) continue;
        // A function with deltas in flight would show a false mismatch (and cost two full
        // states); the reliable stream covers it, so repair waits for a quiet period.
        if (p.sync.busyWith(fn, now, this.cfg.antiEntropyMs) || p.sync.unacked > 0) continue;
        this.send(link, { digest: makeDigest(this.state, fn) }, p);
      }
    }
  }

  /** Heartbeats, and dropping peers that went silent. */
  private tick(): void {
    const now = this.now();
    for (const p of this.peers.values()) {
      const open = this.openLinks(p);
      if (open.length === 0) continue;
      if (p.sync.isSilent(now, this.cfg.peerTimeoutMs)) {
        this.log.warn({ peer: p.sync.nodeId, silentMs: now - p.sync.lastHeardMs }, 'peer silent; dropping its streams');
        for (const l of open) l.close();
        continue;
      }
      const link = this.pushLink(p);
      if (link) this.send(link, { heartbeat: { sent_ms: now } }, p);
    }
    this.updateGauges(now);
  }

  private updateGauges(now: number): void {
    if (!this.metrics) return;
    let up = 0;
    for (const p of this.peers.values()) if (this.isAlive(p, now)) up++;
    this.metrics.peers.set({ state: 'connected' }, up);
    this.metrics.peers.set({ state: 'disconnected' }, this.peers.size - up);
    this.metrics.crdts.set(this.state.size);
    this.metrics.persistPending.set(this.store.pending);
  }

  // ---------------------------------------------------------------- links

  private openLinks(p: PeerRuntime): Link[] {
    const out: Link[] = [];
    const o = p.out?.link;
    if (o && o.peerId === p.sync.nodeId) out.push(o);
    for (const l of p.inbound) if (l.open) out.push(l);
    return out;
  }

  /** The stream we push our own updates on: the one we dialled, else one the peer dialled. */
  private pushLink(p: PeerRuntime): Link | undefined {
    const o = p.out?.link;
    if (o && o.peerId === p.sync.nodeId) return o;
    for (const l of p.inbound) if (l.open) return l;
    return undefined;
  }

  private isAlive(p: PeerRuntime, now: number): boolean {
    return this.openLinks(p).length > 0 && !p.sync.isSilent(now, this.cfg.peerTimeoutMs);
  }

  private send(link: Link, m: PeerMessage, p: PeerRuntime | undefined): void {
    const bytes = link.send(m);
    if (p) this.countSent(p, bytes, Object.keys(m)[0]!);
  }

  private countSent(p: PeerRuntime, bytes: number, kind: string): void {
    if (bytes === 0) return;
    p.sync.sent(bytes);
    if (kind === 'updates') {
      p.sync.stats.updateBytesSent += bytes;
      p.sync.stats.updateMessagesSent += 1;
    }
    if (this.metrics) {
      this.metrics.replicationBytes.inc(bytes, p.sync.nodeId, 'out');
      this.metrics.replicationMessages.inc(1, p.sync.nodeId, 'out', kind);
    }
  }

  onOpen(link: Link, authId: string): void {
    if (link.kind === 'in') this.log.debug({ from: link.address, node: authId }, 'inbound peer stream authenticated');
  }

  /** A peer link refused by the handshake or a message MAC (either side). The reason names ids and addresses only. */
  onAuthFailure(address: string, r: LinkRefusal): void {
    this.metrics?.authFailures.inc(1, r.code);
    this.log.warn({ address, code: r.code, reason: r.reason }, 'peer link refused');
  }

  onClose(link: Link, reason: string): void {
    const p = link.peerId ? this.peers.get(link.peerId) : undefined;
    if (p) {
      p.inbound.delete(link);
      if (link.kind === 'out') p.sync.resetInflight();
    }
    if (!this.closed) this.log.info({ peer: link.peerId, address: link.address, kind: link.kind, reason }, 'peer stream closed');
  }

  onMessage(link: Link, m: ReceivedPeerMessage, bytes: number): void {
    if (this.closed) return;
    const body = m.body ?? Object.keys(m)[0];
    if (body === 'hello' && 'hello' in m) {
      this.onHello(link, m.hello, bytes);
      return;
    }
    const p = link.peerId ? this.peers.get(link.peerId) : undefined;
    if (!p) {
      this.log.warn({ address: link.address, body }, 'message before Hello; closing the stream');
      link.close();
      return;
    }
    const now = this.now();
    p.sync.heard(now, bytes);
    if (this.metrics) {
      this.metrics.replicationBytes.inc(bytes, p.sync.nodeId, 'in');
      this.metrics.replicationMessages.inc(1, p.sync.nodeId, 'in', body ?? 'unknown');
    }
    switch (body) {
      case 'updates': {
        const u = (m as { updates: Updates }).updates;
        for (const w of u.entries) this.mergeWire(u.function, w);
        if (u.seq > 0) p.sync.activity(u.function, now);
        if (u.seq > 0) this.send(link, { ack: { seq: u.seq } }, p);
        return;
      }
      case 'ack': {
        const lag = p.sync.acked((m as { ack: { seq: number } }).ack.seq, performance.now());
        if (lag !== undefined) this.metrics?.lag.observe({ peer: p.sync.nodeId }, lag);
        return;
      }
      case 'functions': {
        const fns = (m as { functions: { functions: string[] } }).functions.functions;
        const before = p.sync.functions;
        p.sync.functions = new Set(fns);
        const added = fns.filter((f) => !before.has(f));
        const push = this.pushLink(p);
        if (push && added.length > 0) this.sendFullState(p, push, added);
        return;
      }
      case 'digest': {
        const reply = answerDigest(this.state, (m as { digest: Parameters<typeof answerDigest>[1] }).digest);
        if (reply) this.send(link, { digest_keys: reply }, p);
        return;
      }
      case 'digest_keys': {
        const r = answerDigestKeys(this.state, (m as { digest_keys: Parameters<typeof answerDigestKeys>[1] }).digest_keys, this.chunkBytes);
        for (const u of r.updates) this.send(link, { updates: u }, p);
        if (r.want) this.send(link, { want: r.want }, p);
        return;
      }
      case 'want': {
        for (const u of answerWant(this.state, (m as { want: Parameters<typeof answerWant>[1] }).want, this.chunkBytes)) {
          this.send(link, { updates: u }, p);
        }
        return;
      }
      case 'heartbeat':
        return;
      default:
        this.log.warn({ peer: p.sync.nodeId, body }, 'unknown peer message ignored');
    }
  }

  private onHello(link: Link, h: { node_id: string; address: string; functions: string[]; incarnation: string }, bytes: number): void {
    if (h.node_id !== link.authId) {
      // The handshake authenticated another id than the one this Hello claims.
      this.onAuthFailure(link.address, {
        ok: false,
        code: 'EDGE_MISO_PEER_ID',
        reason: `the peer at ${link.address} authenticated as '${link.authId}' but its Hello claims '${h.node_id}'`,
      });
      link.close();
      return;
    }
    if (h.node_id === this.nodeId) {
      // We dialled ourselves (our own address in the static list or in mDNS answers).
      if (link.kind === 'out') {
        this.selfAddresses.add(link.address);
        this.removePeerAddress(link.address);
      } else {
        link.close();
      }
      return;
    }
    const now = this.now();
    const address = advertisedAddress(h.address, link);
    let p = this.peers.get(h.node_id);
    if (!p) {
      p = { sync: new PeerSync(h.node_id, address || link.address, now), out: undefined, inbound: new Set() };
      this.peers.set(h.node_id, p);
      this.log.info({ peer: h.node_id, address: address || link.address }, 'new peer');
    }
    if (address) p.sync.address = address;
    link.peerId = h.node_id;
    p.sync.heard(now, bytes);
    p.sync.functions = new Set(h.functions);
    p.sync.incarnation = h.incarnation;
    if (link.kind === 'in') {
      p.inbound.add(link);
      this.send(link, { hello: this.hello() }, p);
      // Dial back so each side pushes on its own stream (also makes static lists symmetric).
      if (address && !this.dialers.has(address) && !(p.out && this.dialers.get(p.out.address) === p.out)) this.addPeerAddress(address, h.node_id);
      return;
    }
    const dialer = this.dialers.get(link.address);
    if (!dialer) return;
    if (p.out && p.out !== dialer && p.out.link) {
      // A second address for a node we already stream to: keep the first.
      this.removePeerAddress(link.address);
      return;
    }
    p.out = dialer;
    dialer.peerId = h.node_id;
    dialer.established();
    // Our functions as they are now: a function registered while this link was still being
    // established was not broadcast on it, and the hello we sent may predate it.
    this.send(link, { functions: { functions: [...this.local.keys()] } }, p);
    // Full state on (re)join: everything we hold for the functions the peer runs.
    this.sendFullState(p, link, p.sync.functions);
  }

  private mergeWire(fn: string, w: WireEntry): void {
    let changed: boolean;
    try {
      changed = this.state.merge(fn, w.object, w.name, fromWire(w));
    } catch (err) {
      this.log.warn({ err, fn, object: w.object, name: w.name }, 'dropping an undecodable entry from a peer');
      return;
    }
    if (changed) {
      const p = this.store.changed(fn, w.object, w.name);
      // Remote changes are written behind; a failed write is logged and retried by the store.
      if (p) p.catch(squashError);
    }
  }

  /** Current wire form of one key, for the write-behind store. */
  snapshot(fn: string, object: string, name: string): WireEntry | undefined {
    const e = this.state.get(fn, object, name);
    return e ? toWire(object, name, e) : undefined;
  }

  /** Stops timers, flushes pending replication, closes every stream. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    // Send what is still debounced before going away.
    if (this.flushTimer) {
      clearTimeout(this.flushTimer as NodeJS.Timeout);
      clearImmediate(this.flushTimer as NodeJS.Immediate);
      this.flushTimer = undefined;
    }
    for (const batch of this.debouncer.takeDue(Number.POSITIVE_INFINITY)) {
      const entries = batch.entries.map((x) => toWire(x.object, x.name, x.delta));
      for (const p of this.peers.values()) {
        const link = p.sync.runs(batch.fn) ? this.pushLink(p) : undefined;
        if (link) this.send(link, { updates: { function: batch.fn, entries, seq: 0 } }, p);
      }
    }
    this.closed = true;
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.antiEntropyTimer) clearInterval(this.antiEntropyTimer);
    for (const d of this.dialers.values()) d.stop();
    this.dialers.clear();
    for (const p of this.peers.values()) for (const l of [...p.inbound]) l.close();
  }
}

/** Up to n distinct elements of xs, chosen uniformly at random. */
function pickRandom<T>(xs: T[], n: number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, Math.max(1, n));
}

/** The peer's advertised address; a wildcard host is replaced by the address it connected from. */
function advertisedAddress(advertised: string, link: Link): string {
  if (!advertised) return '';
  const m = /^(0\.0\.0\.0|\[::\]|::):(\d+)$/.exec(advertised);
  if (!m) return advertised;
  if (link.kind !== 'in') return '';
  const from = link.address.replace(/^ipv4:|^ipv6:/, '');
  const host = from.slice(0, from.lastIndexOf(':'));
  return host ? `${host}:${m[2]}` : '';
}
