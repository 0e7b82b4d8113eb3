/**
 * The MISO agent: holds this node's MISO objects and serves the SDK. It is a facade over
 *   - peers.ts: who the peers are, the links to them, liveness (heartbeats);
 *   - replicator.ts: debounced deltas out, full states, anti-entropy, merging what peers send;
 *   - restore.ts: fetching CRDTs missing here from peers (MISO's Algorithm 2);
 *   - peer-protocol.ts: the pure parts of the peer protocol those three share;
 * plus sync/ (pure CRDT state and protocol), transport/grpc/ (streams) and store/ (MongoDB,
 * write-behind). The servers themselves are built in app.ts.
 */
import { MeshKeys } from '@syncmesh-edge/mesh-auth';
import type { AgentConfig, StaticPeer } from '../config.js';
import { MisoError } from '../errors.js';
import type { Logger } from '@syncmesh-edge/log';
import type { FetchRequest, FetchResponse, ReceivedPeerMessage } from '../sync/messages.js';
import { crdtOf, fromWire, ReplicaState, toWire, wrongType, type AnyCrdt, type WireEntry } from '../sync/state.js';
import type { StateStore } from '../store/types.js';
import type { LinkRefusal } from '../transport/grpc/auth.js';
import type { PeerHandlers } from '../transport/grpc/peer-server.js';
import type { Link } from '../transport/grpc/peer-wire.js';
import type { CrdtValueOut, ReadOut, SdkHandlers } from '../transport/grpc/sdk-server.js';
import type { AgentMetrics } from './metrics.js';
import { fetchAnswer } from './peer-protocol.js';
import { PeerTable, type SelfIdentity } from './peers.js';
import { Replicator } from './replicator.js';
import { Restorer } from './restore.js';

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
  replicaId = '';
  readonly state = new ReplicaState();
  readonly keys: MeshKeys;
  private readonly self: SelfIdentity = { nodeId: '', incarnation: '', advertiseAddress: '' };
  /** fn -> registered function replicas on this node. */
  private readonly local = new Map<string, Set<string>>();
  private readonly peers: PeerTable;
  private readonly replicator: Replicator;
  private readonly restorer: Restorer;
  private tickTimer: NodeJS.Timeout | undefined;
  private antiEntropyTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly log: Logger;
  private readonly cfg: AgentConfig;
  private readonly store: StateStore;
  private readonly metrics: AgentMetrics | undefined;
  private readonly now: () => number;

  constructor(deps: AgentDeps) {
    this.cfg = deps.config;
    this.keys = deps.keys ?? new MeshKeys(this.cfg.meshSecret);
    this.log = deps.log.child({ module: 'agent' });
    this.store = deps.store;
    this.metrics = deps.metrics;
    this.now = deps.now ?? Date.now;
    const common = { config: this.cfg, log: this.log, metrics: this.metrics, now: this.now };
    this.peers = new PeerTable({
      ...common,
      keys: this.keys,
      self: this.self,
      localFunctions: () => [...this.local.keys()],
      onPeerMessage: (p, link, body, m) => this.replicator.onMessage(p, link, body, m),
      onEstablished: (p, link) => this.replicator.catchUp(p, link),
    });
    this.replicator = new Replicator({ ...common, state: this.state, store: this.store, peers: this.peers, local: this.local });
    this.restorer = new Restorer({ ...common, state: this.state, peers: this.peers, merge: (fn, w) => this.replicator.mergeWire(fn, w) });
  }

  get nodeId(): string {
    return this.self.nodeId;
  }

  get incarnation(): string {
    return this.self.incarnation;
  }

  /** host:port other agents dial (set by app.ts once the peer server is bound). */
  get advertiseAddress(): string {
    return this.self.advertiseAddress;
  }

  set advertiseAddress(address: string) {
    this.self.advertiseAddress = address;
  }

  /** Reads the node identity and loads the persisted state. */
  async load(): Promise<void> {
    const id = await this.store.identity(this.cfg.nodeId);
    this.self.nodeId = id.nodeId;
    this.self.incarnation = String(id.incarnation);
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
   * claimed for that address; the link is dropped unless the handshake authenticates exactly that id.
   */
  addPeerAddress(address: string, expect?: string): void {
    if (!this.closed) this.peers.addAddress(address, expect);
  }

  /** Stops dialling an address (mDNS goodbye). Streams already open stay until they break. */
  removePeerAddress(address: string): void {
    this.peers.removeAddress(address);
  }

  // ---------------------------------------------------------------- SDK API

  register(fn: string, replica: string): { node_id: string; replicas: number } {
    let set = this.local.get(fn);
    const isNew = !set;
    if (!set) this.local.set(fn, (set = new Set()));
    set.add(replica);
    if (isNew) {
      this.log.info({ fn }, 'function now runs on this node');
      this.replicator.broadcastFunctions();
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
      this.replicator.broadcastFunctions();
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
    const pending = this.restorer.ensureLocal(fn, object, name);
    if (pending) return pending.then(() => this.applyHere(t, fn, object, name, type, op, returnValue));
    return this.applyHere(t, fn, object, name, type, op, returnValue);
  }

  private applyHere(t: AnyCrdt, fn: string, object: string, name: string, type: string, op: unknown, returnValue: boolean): string | Promise<string> {
    const { entry, delta } = this.state.applyLocal(fn, object, name, type, op, this.replicaId);
    this.replicator.queue(fn, object, name, delta);
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
    const pending = this.restorer.ensureLocal(fn, object, name);
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
    if (!this.state.objectEntries(fn, object)) await this.restorer.restore(fn, object, '');
    return this.valuesOf(this.state.objectEntries(fn, object));
  }

  async delete(fn: string, object: string, name: string): Promise<number> {
    if (name) {
      const pending = this.restorer.ensureLocal(fn, object, name);
      if (pending) await pending;
    } else if (!this.state.objectEntries(fn, object)) {
      await this.restorer.restore(fn, object, '');
    }
    const names = name ? [name] : [...(this.state.objectEntries(fn, object)?.keys() ?? [])];
    let deleted = 0;
    const writes: Promise<void>[] = [];
    for (const n of names) {
      const tomb = this.state.deleteLocal(fn, object, n);
      if (!tomb) continue;
      deleted++;
      this.replicator.queue(fn, object, n, tomb);
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
      connected: this.peers.isAlive(p, now),
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
      send_last_ms: this.replicator.lastSendOf(f)?.ms ?? 0,
      send_last_peers: this.replicator.lastSendOf(f)?.peers ?? 0,
      nodes: [
        ...(this.local.has(f) ? [this.nodeId] : []),
        ...[...this.peers.values()].filter((p) => this.peers.isAlive(p, now) && p.sync.runs(f)).map((p) => p.sync.nodeId),
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

  /** Anti-entropy: a digest per shared function to every live peer. */
  antiEntropy(): void {
    this.replicator.antiEntropy();
  }

  /** Sends every due debounced delta now (tests and benchmarks; the timer calls it otherwise). */
  flush(): void {
    this.replicator.flush();
  }

  /** Heartbeats, dropping silent peers, and the gauges. */
  private tick(): void {
    const now = this.now();
    this.peers.heartbeat(now);
    if (!this.metrics) return;
    const up = this.peers.countAlive(now);
    this.metrics.peers.set({ state: 'connected' }, up);
    this.metrics.peers.set({ state: 'disconnected' }, this.peers.size - up);
    this.metrics.crdts.set(this.state.size);
    this.metrics.persistPending.set(this.store.pending);
  }

  // ---------------------------------------------------------------- peer service (PeerHandlers)

  async fetch(req: FetchRequest): Promise<FetchResponse> {
    return fetchAnswer(this.state, req);
  }

  onOpen(link: Link, authId: string): void {
    this.peers.onOpen(link, authId);
  }

  onAuthFailure(address: string, r: LinkRefusal): void {
    this.peers.onAuthFailure(address, r);
  }

  onClose(link: Link, reason: string): void {
    this.peers.onClose(link, reason);
  }

  onMessage(link: Link, m: ReceivedPeerMessage, bytes: number): void {
    if (!this.closed) this.peers.onMessage(link, m, bytes);
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
    this.replicator.close();
    this.closed = true;
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.antiEntropyTimer) clearInterval(this.antiEntropyTimer);
    this.peers.close();
  }
}
