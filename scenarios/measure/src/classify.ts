/**
 * Which link a captured packet belongs to, so that every byte that crosses the emulated network
 * is counted exactly once:
 *
 *   client          everything on the client's interface (client <-> entry node, or client <->
 *                   central server through its emulated link)
 *   node_node       on a node's interface, to or from a mesh link proxy (the request leaving the
 *                   asking node and the answer coming back); counted once, at the sender
 *   node_central    on a node's interface, to or from the central server (directly or through its
 *                   emulated link): the baseline's ingest
 *   agent           on a node's interface, straight to or from another node's address: the
 *                   MISO agents (the functions talk only through the link proxies); counted once,
 *                   at the sender (at the receiver when the sender's interface is not captured),
 *                   reported on its own and not part of `counted_bytes` (the comparison of the
 *                   query systems)
 *   relay           the second leg of a proxied connection (link emulator -> destination): the
 *                   same bytes again, shown but not counted
 *   other           anything else on a counted interface (ARP, stray traffic); shown, not counted
 *
 * The central server's interface is captured too, as a cross-check (`central_seen`).
 */
import type { Packet } from './pcap.js';

export type InterfaceKind = 'client' | 'node' | 'central';

export interface LayoutNode {
  id: string;
  addr: string;
}

export interface Layout {
  hostAddr: string;
  clientAddr: string;
  centralAddr: string | null;
  centralMongoPort: number;
  nodes: LayoutNode[];
  /** Mesh link proxies on the host: listen port -> directed pair. */
  meshProxies: ReadonlyMap<number, { from: string; to: string }>;
  /** Central server proxies on the host: listen port -> who uses it. */
  centralProxies: ReadonlyMap<number, { kind: 'ingest'; node: string } | { kind: 'client' }>;
}

export interface CapturedInterface {
  iface: string;
  kind: InterfaceKind;
  /** Node id for kind 'node'. */
  node?: string;
  packets: readonly Packet[];
}

export interface PairTraffic {
  from: string;
  to: string;
  bytes: number;
}

export interface TrafficBreakdown {
  /** client + node_node + node_central: every byte on the emulated network, once. */
  counted_bytes: number;
  client_bytes: number;
  node_node_bytes: number;
  node_central_bytes: number;
  /** Direct node <-> node traffic (MISO agents), once; not in counted_bytes. */
  agent_bytes: number;
  relay_bytes: number;
  other_bytes: number;
  central_seen_bytes: number;
  counted_packets: number;
  pairs: PairTraffic[];
  interfaces: { iface: string; kind: InterfaceKind; packets: number; bytes: number }[];
}

export function emptyBreakdown(): TrafficBreakdown {
  return {
    counted_bytes: 0,
    client_bytes: 0,
    node_node_bytes: 0,
    node_central_bytes: 0,
    agent_bytes: 0,
    relay_bytes: 0,
    other_bytes: 0,
    central_seen_bytes: 0,
    counted_packets: 0,
    pairs: [],
    interfaces: [],
  };
}

export function classify(layout: Layout, captures: readonly CapturedInterface[]): TrafficBreakdown {
  const out = emptyBreakdown();
  const pairs = new Map<string, PairTraffic>();
  const nodeAddr = new Map(layout.nodes.map((n) => [n.id, n.addr]));
  const nodeAddrs = new Set(nodeAddr.values());
  const capturedNodeAddrs = new Set(captures.filter((c) => c.kind === 'node').map((c) => nodeAddr.get(c.node ?? '')));
  for (const cap of captures) {
    let bytes = 0;
    for (const p of cap.packets) {
      bytes += p.len;
      if (cap.kind === 'central') {
        out.central_seen_bytes += p.len;
        continue;
      }
      if (p.src === null || p.dst === null) {
        out.other_bytes += p.len;
        continue;
      }
      if (cap.kind === 'client') {
        out.client_bytes += p.len;
        out.counted_packets++;
        continue;
      }
      const own = nodeAddr.get(cap.node ?? '');
      const outgoing = p.src === own;
      const other = outgoing ? { addr: p.dst, port: p.dport } : { addr: p.src, port: p.sport };
      const meshLink = other.addr === layout.hostAddr && other.port !== null ? layout.meshProxies.get(other.port) : undefined;
      const centralLink = other.addr === layout.hostAddr && other.port !== null ? layout.centralProxies.get(other.port) : undefined;
      if (meshLink) {
        out.node_node_bytes += p.len;
        out.counted_packets++;
        const key = `${meshLink.from}>${meshLink.to}`;
        const pair = pairs.get(key) ?? { from: meshLink.from, to: meshLink.to, bytes: 0 };
        pair.bytes += p.len;
        pairs.set(key, pair);
      } else if ((centralLink && centralLink.kind === 'ingest') || (other.addr === layout.centralAddr && other.port === layout.centralMongoPort)) {
        out.node_central_bytes += p.len;
        out.counted_packets++;
      } else if (nodeAddrs.has(other.addr) && other.addr !== own) {
        // agent to agent: count at the sender, or here when the sender's interface is not captured
        if (outgoing || !capturedNodeAddrs.has(other.addr)) out.agent_bytes += p.len;
      } else if (other.addr === layout.hostAddr) {
        out.relay_bytes += p.len;
      } else if (other.addr === layout.clientAddr) {
        // client <-> this node: already counted on the client's interface
      } else {
        out.other_bytes += p.len;
      }
    }
    out.interfaces.push({ iface: cap.iface, kind: cap.kind, packets: cap.packets.length, bytes });
  }
  out.counted_bytes = out.client_bytes + out.node_node_bytes + out.node_central_bytes;
  out.pairs = [...pairs.values()].sort((a, b) => a.from.localeCompare(b.from, 'en', { numeric: true }) || a.to.localeCompare(b.to, 'en', { numeric: true }));
  return out;
}
