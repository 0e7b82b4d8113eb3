/**
 * The agent's peers: who they are (the Hello exchange), how we reach them (one dialler per
 * address, the streams they dialled to us), whether they are alive (heartbeats, silence), and
 * what each link carried. Replication content is the replicator's; this module only owns links.
 */
import type { MeshKeys } from '@syncmesh-edge/mesh-auth';
import type { AgentConfig } from '../config.js';
import { DEFAULT_BACKOFF_MAX_MS, DEFAULT_BACKOFF_MIN_MS } from '../config.js';
import type { Logger } from '@syncmesh-edge/log';
import type { Hello, PeerMessage, ReceivedPeerMessage } from '../sync/messages.js';
import { PeerSync } from '../sync/peer.js';
import type { LinkRefusal } from '../transport/grpc/auth.js';
import { OutboundPeer } from '../transport/grpc/peer-client.js';
import type { Link } from '../transport/grpc/peer-wire.js';
import type { AgentMetrics } from './metrics.js';
import { advertisedAddress, helloVerdict } from './peer-protocol.js';

/** One peer node: its protocol state and the links to it. */
export interface PeerRuntime {
  sync: PeerSync;
  /** The dialler whose stream we push on (undefined until its Hello came back). */
  out: OutboundPeer | undefined;
  /** Streams the peer dialled to us. */
  inbound: Set<Link>;
}

/** Who this agent is, as the links need it (set once the state is loaded and the server bound). */
export interface SelfIdentity {
  nodeId: string;
  incarnation: string;
  advertiseAddress: string;
}

export interface PeerTableDeps {
  config: AgentConfig;
  keys: MeshKeys;
  log: Logger;
  metrics: AgentMetrics | undefined;
  now: () => number;
  self: SelfIdentity;
  /** The functions running on this node (sent in Hello). */
  localFunctions: () => string[];
  /** Any message after the Hello, from a known peer. */
  onPeerMessage(p: PeerRuntime, link: Link, body: string | undefined, m: ReceivedPeerMessage): void;
  /** Our dialled stream to `p` is established (its Hello came back): catch the peer up. */
  onEstablished(p: PeerRuntime, link: Link): void;
}

export class PeerTable {
  private readonly peers = new Map<string, PeerRuntime>();
  /** Every dialler by address (static list, mDNS, learned from Hello). */
  private readonly dialers = new Map<string, OutboundPeer>();
  private readonly selfAddresses = new Set<string>();
  private closed = false;

  constructor(private readonly d: PeerTableDeps) {}

  values(): IterableIterator<PeerRuntime> {
    return this.peers.values();
  }

  get size(): number {
    return this.peers.size;
  }

  /**
   * Dials an agent at host:port (static list, mDNS, dial-back). Idempotent. `expect`: the node id
   * claimed for that address (mDNS record, `id@host:port`, the Hello of a dial-back); the link is
   * dropped unless the handshake authenticates exactly that id.
   */
  addAddress(address: string, expect?: string): void {
    if (this.closed || this.dialers.has(address) || this.selfAddresses.has(address) || address === this.d.self.advertiseAddress) return;
    const dialer = new OutboundPeer(address, {
      nodeId: this.d.self.nodeId,
      keys: this.d.keys,
      expect,
      maxMessageBytes: this.d.config.maxMessageBytes,
      backoff: { baseMs: DEFAULT_BACKOFF_MIN_MS, maxMs: DEFAULT_BACKOFF_MAX_MS },
      onOpen: (link) => this.send(link, { hello: this.hello() }, undefined),
      onMessage: (link, m, bytes) => this.onMessage(link, m, bytes),
      onClose: (link, reason) => this.onClose(link, reason),
      onAuthFailure: (addr, r) => this.onAuthFailure(addr, r),
    });
    this.dialers.set(address, dialer);
    dialer.start();
  }

  /** Stops dialling an address (mDNS goodbye). Streams already open stay until they break. */
  removeAddress(address: string): void {
    const dialer = this.dialers.get(address);
    if (!dialer) return;
    this.dialers.delete(address);
    for (const p of this.peers.values()) if (p.out === dialer) p.out = undefined;
    dialer.stop();
  }

  /** Do we dial `nodeId` already, at any address (its id pinned there, or its stream established)? */
  private dialsNode(nodeId: string): boolean {
    for (const d of this.dialers.values()) if (d.expect === nodeId || d.peerId === nodeId) return true;
    return false;
  }

  hello(): Hello {
    const s = this.d.self;
    return { node_id: s.nodeId, address: s.advertiseAddress, functions: this.d.localFunctions(), incarnation: s.incarnation };
  }

  // ---------------------------------------------------------------- links

  openLinks(p: PeerRuntime): Link[] {
    const out: Link[] = [];
    const o = p.out?.link;
    if (o && o.peerId === p.sync.nodeId) out.push(o);
    for (const l of p.inbound) if (l.open) out.push(l);
    return out;
  }

  /** The stream we push our own updates on: the one we dialled, else one the peer dialled. */
  pushLink(p: PeerRuntime): Link | undefined {
    const o = p.out?.link;
    if (o && o.peerId === p.sync.nodeId) return o;
    for (const l of p.inbound) if (l.open) return l;
    return undefined;
  }

  isAlive(p: PeerRuntime, now: number): boolean {
    return this.openLinks(p).length > 0 && !p.sync.isSilent(now, this.d.config.peerTimeoutMs);
  }

  /** Live peers that run `fn` and can answer a fetch (we dialled them). */
  fetchable(fn: string, now: number): PeerRuntime[] {
    return [...this.peers.values()].filter((p) => p.out && this.isAlive(p, now) && p.sync.runs(fn));
  }

  send(link: Link, m: PeerMessage, p: PeerRuntime | undefined): void {
    const bytes = link.send(m);
    if (p) this.countSent(p, bytes, Object.keys(m)[0]!);
  }

  countSent(p: PeerRuntime, bytes: number, kind: string): void {
    if (bytes === 0) return;
    p.sync.sent(bytes);
    if (kind === 'updates') {
      p.sync.stats.updateBytesSent += bytes;
      p.sync.stats.updateMessagesSent += 1;
    }
    if (this.d.metrics) {
      this.d.metrics.replicationBytes.inc(bytes, p.sync.nodeId, 'out');
      this.d.metrics.replicationMessages.inc(1, p.sync.nodeId, 'out', kind);
    }
  }

  /** Heartbeats, and dropping peers that went silent. */
  heartbeat(now: number): void {
    for (const p of this.peers.values()) {
      const open = this.openLinks(p);
      if (open.length === 0) continue;
      if (p.sync.isSilent(now, this.d.config.peerTimeoutMs)) {
        this.d.log.warn({ peer: p.sync.nodeId, silentMs: now - p.sync.lastHeardMs }, 'peer silent; dropping its streams');
        for (const l of open) l.close();
        continue;
      }
      const link = this.pushLink(p);
      if (link) this.send(link, { heartbeat: { sent_ms: now } }, p);
    }
  }

  countAlive(now: number): number {
    let up = 0;
    for (const p of this.peers.values()) if (this.isAlive(p, now)) up++;
    return up;
  }

  // ---------------------------------------------------------------- link events

  onOpen(link: Link, authId: string): void {
    if (link.kind === 'in') this.d.log.debug({ from: link.address, node: authId }, 'inbound peer stream authenticated');
  }

  /** A peer link refused by the handshake or a message MAC (either side). The reason names ids and addresses only. */
  onAuthFailure(address: string, r: LinkRefusal): void {
    this.d.metrics?.authFailures.inc(1, r.code);
    this.d.log.warn({ address, code: r.code, reason: r.reason }, 'peer link refused');
  }

  onClose(link: Link, reason: string): void {
    const p = link.peerId ? this.peers.get(link.peerId) : undefined;
    if (p) {
      p.inbound.delete(link);
      if (link.kind === 'out') p.sync.resetInflight();
    }
    if (!this.closed) this.d.log.info({ peer: link.peerId, address: link.address, kind: link.kind, reason }, 'peer stream closed');
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
      this.d.log.warn({ address: link.address, body }, 'message before Hello; closing the stream');
      link.close();
      return;
    }
    p.sync.heard(this.d.now(), bytes);
    if (this.d.metrics) {
      this.d.metrics.replicationBytes.inc(bytes, p.sync.nodeId, 'in');
      this.d.metrics.replicationMessages.inc(1, p.sync.nodeId, 'in', body ?? 'unknown');
    }
    this.d.onPeerMessage(p, link, body, m);
  }

  private onHello(link: Link, h: Hello, bytes: number): void {
    const verdict = helloVerdict(h, link.authId, this.d.self.nodeId);
    if (verdict === 'impostor') {
      this.onAuthFailure(link.address, {
        ok: false,
        code: 'EDGE_MISO_PEER_ID',
        reason: `the peer at ${link.address} authenticated as '${link.authId}' but its Hello claims '${h.node_id}'`,
      });
      link.close();
      return;
    }
    if (verdict === 'self') {
      if (link.kind === 'out') {
        this.selfAddresses.add(link.address);
        this.removeAddress(link.address);
      } else {
        link.close();
      }
      return;
    }
    const now = this.d.now();
    const address = advertisedAddress(h.address, link.kind, link.address);
    let p = this.peers.get(h.node_id);
    if (!p) {
      p = { sync: new PeerSync(h.node_id, address || link.address, now), out: undefined, inbound: new Set() };
      this.peers.set(h.node_id, p);
      this.d.log.info({ peer: h.node_id, address: address || link.address }, 'new peer');
    }
    if (address) p.sync.address = address;
    link.peerId = h.node_id;
    p.sync.heard(now, bytes);
    p.sync.functions = new Set(h.functions);
    p.sync.incarnation = h.incarnation;
    if (link.kind === 'in') {
      p.inbound.add(link);
      this.send(link, { hello: this.hello() }, p);
      // Dial back so each side pushes on its own stream (also makes static lists symmetric), unless
      // we dial this node already: a static `id@host:port` entry or an mDNS record names the way
      // to reach it (a link proxy, a NAT), even while that dialer is still backing off.
      if (address && !this.dialers.has(address) && !this.dialsNode(h.node_id)) this.addAddress(address, h.node_id);
      return;
    }
    const dialer = this.dialers.get(link.address);
    if (!dialer) return;
    if (p.out && p.out !== dialer && p.out.link) {
      // A second address for a node we already stream to: keep the first.
      this.removeAddress(link.address);
      return;
    }
    p.out = dialer;
    dialer.peerId = h.node_id;
    dialer.established();
    this.d.onEstablished(p, link);
  }

  /** Stops dialling and closes every stream. Safe to call twice. */
  close(): void {
    this.closed = true;
    for (const dialer of this.dialers.values()) dialer.stop();
    this.dialers.clear();
    for (const p of this.peers.values()) for (const l of [...p.inbound]) l.close();
  }
}
