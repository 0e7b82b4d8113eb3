/**
 * Which class a captured packet belongs to, so that every byte that crosses the network is
 * counted once. It works from a layout: the nodes' addresses and service ports (what
 * `.mesh/topology.json` says, see layoutFromTopology), the clients' addresses, and, in the
 * emulated mesh, the host that runs the link proxies. Classes:
 *
 *   client        client <-> a node (or the central server's function); counted on the client's
 *                 interface when it is captured, else where it is seen
 *   node_node     function to function (mesh forwarding): through a link proxy (counted at the
 *                 asking node's interface) or straight to the other node's function port (VMs
 *                 on a bridge); per directed pair in `pairs`
 *   node_central  MongoDB traffic to the central server (the baseline's ingest), straight or
 *                 through its link proxy
 *   agent         node <-> node to an agent port (the MISO agents), straight or through an
 *                 agent link proxy (counted at the dialling node's interface, as function links
 *                 are); per directed pair in `agent_pairs`; reported on its own, not part of
 *                 `counted_bytes` (the comparison of the query systems)
 *   mongo         other MongoDB traffic (the host or a node to a node's database: loaders,
 *                 oracles); reported, not counted
 *   relay         the second leg of a proxied connection (proxy host -> destination): the same
 *                 bytes again, shown but not counted
 *   other         anything else (ARP, mDNS, unknown ports); shown, not counted
 *
 * A packet between two captured interfaces (node to node, both veths captured) counts once, at
 * the sender (at the receiver when the sender's interface is not captured). A bridge capture
 * (kind 'bridge': tcpdump on the bridge of VMs or namespaces) sees every packet once. The
 * central server's interface is captured as a cross-check only (`central_seen_bytes`).
 */
import type { Packet } from './pcap.js';

export type InterfaceKind = 'client' | 'node' | 'central' | 'bridge';

export interface LayoutNode {
  id: string;
  addr: string;
  /** The port the node's function (or its gateway) answers on. */
  functionPort: number | null;
  agentPort: number | null;
  mongoPort: number | null;
}

export interface Layout {
  nodes: readonly LayoutNode[];
  /** Addresses clients send from (k6's namespace, the demo's client address, the VM host). */
  clientAddrs: readonly string[];
  /** The emulated mesh: the host running the link proxies (toxiproxy), or null (VMs, real links). */
  proxyHost: {
    addr: string;
    /** Mesh link proxies: listen port -> directed pair of node ids. */
    meshProxies: ReadonlyMap<number, { from: string; to: string }>;
    /** Agent link proxies (MISO agents with static peers): listen port -> directed pair, the dialling node first. */
    agentProxies: ReadonlyMap<number, { from: string; to: string }>;
    /** Central server link proxies: listen port -> the node that ingests through it. */
    ingestProxies: ReadonlyMap<number, string>;
  } | null;
  /** The baseline's central server, or null. */
  central: { addr: string; mongoPort: number } | null;
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

export interface NodeLinkTraffic {
  node: string;
  bytes_out: number;
  bytes_in: number;
  packets_out: number;
  packets_in: number;
}

export interface TrafficBreakdown {
  /** client + node_node + node_central: every byte of the query systems on the network, once. */
  counted_bytes: number;
  client_bytes: number;
  node_node_bytes: number;
  node_central_bytes: number;
  /** Node <-> node to an agent port (MISO agents), once; not in counted_bytes. */
  agent_bytes: number;
  /** Other MongoDB traffic (to a node's database), once; not in counted_bytes. */
  mongo_bytes: number;
  relay_bytes: number;
  other_bytes: number;
  central_seen_bytes: number;
  counted_packets: number;
  /** Function to function, per directed pair (asking node first). */
  pairs: PairTraffic[];
  /** Agent to agent, per directed pair (the dialling agent first). */
  agent_pairs: PairTraffic[];
  /** What crossed each node's own link (IPv4 on its interface, or to/from its address on a bridge). */
  nodes: NodeLinkTraffic[];
  interfaces: { iface: string; kind: InterfaceKind; packets: number; bytes: number }[];
}

export function emptyBreakdown(): TrafficBreakdown {
  return {
    counted_bytes: 0,
    client_bytes: 0,
    node_node_bytes: 0,
    node_central_bytes: 0,
    agent_bytes: 0,
    mongo_bytes: 0,
    relay_bytes: 0,
    other_bytes: 0,
    central_seen_bytes: 0,
    counted_packets: 0,
    pairs: [],
    agent_pairs: [],
    nodes: [],
    interfaces: [],
  };
}

type Class = 'client' | 'node_node' | 'node_central' | 'agent' | 'mongo' | 'relay' | 'other';

/** The classes of the query systems' traffic: their bytes make counted_bytes, their packets counted_packets. */
const COUNTED: ReadonlySet<Class> = new Set(['client', 'node_node', 'node_central']);

/** Adds a frame of `len` bytes of class `cls` to the breakdown's totals. */
function addTo(out: TrafficBreakdown, cls: Class, len: number): void {
  out[`${cls}_bytes`] += len;
  if (COUNTED.has(cls)) out.counted_packets++;
}

interface Verdict {
  cls: Class;
  /** Directed pair for node_node and agent. */
  pair?: { from: string; to: string };
  /** The two ends are nodes whose interfaces may both see this packet. */
  nodeToNode?: { src: string; dst: string };
}

interface Endpoint {
  addr: string;
  port: number | null;
}

/** IPv4 multicast (224.0.0.0/4: IGMP reports, mDNS) or the limited broadcast: a link's own chatter, flooded to every port. */
function isGroupAddress(addr: string): boolean {
  const first = Number(addr.slice(0, addr.indexOf('.')));
  return (first >= 224 && first <= 239) || addr === '255.255.255.255';
}

function classOf(layout: Layout, byAddr: ReadonlyMap<string, LayoutNode>, a: Endpoint, b: Endpoint): Verdict {
  // not a query's traffic, whoever sends it (the host's IGMP reports came out as client bytes)
  if (isGroupAddress(b.addr)) return { cls: 'other' };
  const ends = [a, b] as const;
  const ph = layout.proxyHost;
  if (ph) {
    for (const e of ends) {
      if (e.addr !== ph.addr || e.port === null) continue;
      const link = ph.meshProxies.get(e.port);
      if (link) return { cls: 'node_node', pair: link };
      const agentLink = ph.agentProxies.get(e.port);
      if (agentLink) return { cls: 'agent', pair: agentLink };
      if (ph.ingestProxies.has(e.port)) return { cls: 'node_central' };
    }
  }
  const c = layout.central;
  if (c && ends.some((e) => e.addr === c.addr && e.port === c.mongoPort)) return { cls: 'node_central' };
  if (ends.some((e) => layout.clientAddrs.includes(e.addr))) return { cls: 'client' };
  // a node's service at one end: which service it is decides the class
  for (const [srv, peer] of [ends, [b, a] as const]) {
    const n = byAddr.get(srv.addr);
    if (!n || srv.port === null) continue;
    const kind = srv.port === n.agentPort ? 'agent' : srv.port === n.functionPort ? 'node_node' : srv.port === n.mongoPort ? 'mongo' : null;
    if (!kind) continue;
    const caller = byAddr.get(peer.addr);
    if (ph && peer.addr === ph.addr) return { cls: kind === 'mongo' ? 'mongo' : 'relay' };
    if (caller && caller !== n) {
      const nodeToNode = { src: a === srv ? n.id : caller.id, dst: a === srv ? caller.id : n.id };
      return { cls: kind, pair: { from: caller.id, to: n.id }, nodeToNode };
    }
    if (kind === 'mongo') return { cls: 'mongo' };
  }
  const sa = byAddr.get(a.addr);
  const sb = byAddr.get(b.addr);
  // two nodes on a port we do not know: still once, at the sender
  if (sa?.id && sb?.id && sa !== sb) return { cls: 'other', nodeToNode: { src: sa.id, dst: sb.id } };
  return { cls: 'other' };
}

function addPair(m: Map<string, PairTraffic>, pair: { from: string; to: string }, len: number): void {
  const key = `${pair.from}>${pair.to}`;
  const p = m.get(key) ?? { from: pair.from, to: pair.to, bytes: 0 };
  p.bytes += len;
  m.set(key, p);
}

function count(l: NodeLinkTraffic, dir: 'in' | 'out', len: number): void {
  if (dir === 'out') {
    l.bytes_out += len;
    l.packets_out++;
  } else {
    l.bytes_in += len;
    l.packets_in++;
  }
}

const byId = (a: { from: string; to: string }, b: { from: string; to: string }) =>
  a.from.localeCompare(b.from, 'en', { numeric: true }) || a.to.localeCompare(b.to, 'en', { numeric: true });

export function classify(layout: Layout, captures: readonly CapturedInterface[]): TrafficBreakdown {
  const out = emptyBreakdown();
  const pairs = new Map<string, PairTraffic>();
  const agentPairs = new Map<string, PairTraffic>();
  const byAddr = new Map<string, LayoutNode>();
  for (const n of layout.nodes) {
    // on loopback every node shares one address: no node is known by its address alone
    if (byAddr.has(n.addr)) byAddr.set(n.addr, { id: '', addr: n.addr, functionPort: null, agentPort: null, mongoPort: null });
    else byAddr.set(n.addr, n);
  }
  const links = new Map(layout.nodes.map((n) => [n.id, { node: n.id, bytes_out: 0, bytes_in: 0, packets_out: 0, packets_in: 0 }]));
  const capturedNodes = new Set(captures.filter((c) => c.kind === 'node').map((c) => c.node ?? ''));
  const clientCaptured = captures.some((c) => c.kind === 'client');
  for (const cap of captures) {
    let bytes = 0;
    const own = cap.kind === 'node' ? layout.nodes.find((n) => n.id === cap.node) : undefined;
    for (const p of cap.packets) {
      bytes += p.len;
      if (cap.kind === 'central') {
        out.central_seen_bytes += p.len;
        continue;
      }
      if (p.src === null || p.dst === null) {
        addTo(out, 'other', p.len);
        continue;
      }
      if (cap.kind === 'client') {
        addTo(out, 'client', p.len);
        continue;
      }
      // what each node sent and received
      if (own) {
        // what the node sent or what was addressed to it; a frame flooded to every port (a
        // multicast report, an mDNS announcement of another node) is not this link's traffic
        if (p.src === own.addr) count(links.get(own.id)!, 'out', p.len);
        else if (p.dst === own.addr) count(links.get(own.id)!, 'in', p.len);
      } else if (cap.kind === 'bridge') {
        const s = byAddr.get(p.src)?.id;
        const d = byAddr.get(p.dst)?.id;
        if (s) count(links.get(s)!, 'out', p.len);
        if (d) count(links.get(d)!, 'in', p.len);
      }
      const v = classOf(layout, byAddr, { addr: p.src, port: p.sport }, { addr: p.dst, port: p.dport });
      if (v.cls === 'client' && clientCaptured) continue; // counted on the client's interface
      if (v.nodeToNode && cap.kind === 'node') {
        // seen on both nodes' interfaces when both are captured: count at the sender
        const sentHere = v.nodeToNode.src === own?.id;
        if (!sentHere && capturedNodes.has(v.nodeToNode.src)) continue;
      }
      addTo(out, v.cls, p.len);
      if (v.cls === 'node_node') addPair(pairs, v.pair!, p.len);
      else if (v.cls === 'agent') addPair(agentPairs, v.pair!, p.len);
    }
    out.interfaces.push({ iface: cap.iface, kind: cap.kind, packets: cap.packets.length, bytes });
  }
  out.counted_bytes = [...COUNTED].reduce((sum, cls) => sum + out[`${cls}_bytes`], 0);
  out.pairs = [...pairs.values()].sort(byId);
  out.agent_pairs = [...agentPairs.values()].sort(byId);
  out.nodes = [...links.values()];
  return out;
}

/** The part of `.mesh/topology.json` (scenarios/mesh/src/plan/topology.ts) the classifier reads. */
export interface TopologyLike {
  host_address: string;
  nodes: readonly {
    id: string;
    address: string;
    function_url: string;
    agent_address: string | null;
    mongodb_uri: string | null;
    /** The URL this node names each peer by (its registry entry). */
    peers: Readonly<Record<string, string>>;
    /** The emulated mesh: the link proxy (host:port) this node's traffic to each peer's function crosses; absent for real links (VMs). */
    links?: Readonly<Record<string, string>> | null;
    /** The emulated mesh: the agent link proxy (host:port) to each peer's agent; absent or null when the agents connect directly or none run. */
    agent_links?: Readonly<Record<string, string>> | null;
  }[];
}

function portOf(url: string, fallback: number): number {
  const u = new URL(url);
  return u.port ? Number(u.port) : fallback;
}

/**
 * The layout of a mesh from its topology: node addresses and ports; the link proxies on the host
 * (`host_address`) that `links` and `agent_links` list are the emulated mesh's (its nodes name
 * each other by their own addresses, and their namespaces redirect those to the proxies, so the
 * packets on the wire go to the proxies); without them, nodes reach each other directly (VMs on a
 * bridge, real links). `clientAddrs` defaults to the host's address when the mesh has no link
 * proxies (the operator's machine is the client).
 */
export function layoutFromTopology(t: TopologyLike, opts: { clientAddrs?: readonly string[] } = {}): Layout {
  const meshProxies = new Map<number, { from: string; to: string }>();
  const agentProxies = new Map<number, { from: string; to: string }>();
  for (const n of t.nodes) {
    for (const [proxies, into] of [
      [n.links, meshProxies],
      [n.agent_links, agentProxies],
    ] as const) {
      for (const [to, address] of Object.entries(proxies ?? {})) {
        const u = new URL(`tcp://${address}`);
        if (u.hostname === t.host_address && u.port) into.set(Number(u.port), { from: n.id, to });
      }
    }
  }
  const proxied = meshProxies.size + agentProxies.size > 0;
  return {
    nodes: t.nodes.map((n) => ({
      id: n.id,
      addr: n.address,
      functionPort: portOf(n.function_url, 80),
      agentPort: n.agent_address ? Number(n.agent_address.slice(n.agent_address.lastIndexOf(':') + 1)) : null,
      mongoPort: n.mongodb_uri ? portOf(n.mongodb_uri.replace(/^mongodb:/, 'http:'), 27017) : null,
    })),
    clientAddrs: opts.clientAddrs ?? (proxied ? [] : [t.host_address]),
    proxyHost: proxied ? { addr: t.host_address, meshProxies, agentProxies, ingestProxies: new Map() } : null,
    central: null,
  };
}
