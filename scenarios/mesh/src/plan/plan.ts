/**
 * The mesh's naming and addressing plan: a pure function of the configuration, so that
 * `mesh-down` can recompute every name after a crash and two meshes with different names never
 * collide (every namespace, interface and bridge name starts with the mesh name; the subnet and
 * the loopback port range are derived from it).
 */
import { join } from 'node:path';
import type { Isolation } from '../config.js';
import { DEFAULT_AGENT_PORT, DEFAULT_FUNCTION_PORT, DEFAULT_LISTENER_HEALTH_PORT, DEFAULT_MONGO_PORT, LOOPBACK_PORT_SPAN } from '../config.js';

export { LOOPBACK_PORT_SPAN, MAX_LOOPBACK_PORT_BASE } from '../config.js';

/** faasd gateway path of the function; mesh URLs look like real node URLs. */
export const FUNCTION_PATH = '/function/syncmesh-fn';
/** Loopback mode: first port of the lowest range a mesh name picks. */
export const LOOPBACK_PORT_FLOOR = 20000;
/** Loopback mode: how many ranges fit between the floor and the last port. */
const LOOPBACK_RANGES = Math.floor((65536 - LOOPBACK_PORT_FLOOR) / LOOPBACK_PORT_SPAN);
/** netns mode: first port of the function links (directed-pair proxies) on the host's bridge address. */
export const NETNS_PROXY_PORT_BASE = 20000;
/** netns mode: first port of the agent links (under the ephemeral ports, above the scenario's ingest proxies at 24000). */
export const NETNS_AGENT_PROXY_PORT_BASE = 25000;
export const TOXIPROXY_API_PORT = 8474;
/** Interface names are limited to 15 characters by the kernel. */
export const MAX_IFNAME = 15;

export interface NodePlan {
  readonly index: number;
  readonly id: string;
  /** Network namespace (netns mode) or null. */
  readonly netns: string | null;
  /** Host side of the node's veth (netns mode) or null. */
  readonly hostIf: string | null;
  /** Address the node's services listen on, reachable from the host. */
  readonly addr: string;
  readonly mongoPort: number;
  readonly functionPort: number;
  readonly agentPort: number;
  /** The listener's health endpoint (/readyz). */
  readonly listenerPort: number;
  /** Function URL as seen from the host (direct, no link emulation). */
  readonly functionUrl: string;
  /** MongoDB URI as seen from the host. */
  readonly mongoUri: string;
  /** MongoDB URI as the node's own processes use it. */
  readonly localMongoUri: string;
  readonly dir: string;
}

/**
 * One toxiproxy proxy: one direction of one node pair, for one service.
 *
 * netns mode: `from` names `to` by `to`'s own address (`upstream`), and `from`'s namespace
 * redirects that address and port to the proxy (iptables DNAT, see network/network.ts), so registries,
 * MISO peers and `topology.json` hold the nodes' real addresses while the traffic still crosses
 * the emulated link. Loopback mode has no namespaces to redirect in: `from` names the proxy.
 */
export interface ProxyPlan {
  /** toxiproxy proxy name, e.g. node-1>node-2 (function) or node-1>node-2:agent */
  readonly name: string;
  readonly from: number;
  readonly to: number;
  readonly listenHost: string;
  readonly listenPort: number;
  /** host:port the proxy forwards to (the destination's function server or agent). */
  readonly upstream: string;
  /** netns mode: `from`'s namespace redirects connections to `upstream` to this proxy. */
  readonly redirected: boolean;
}

/** The function link from one node to another. */
export interface LinkPlan extends ProxyPlan {
  /**
   * URL under which `from` reaches `to` (its registry entry): `to`'s own function URL, redirected
   * to the link in netns mode; the proxy's URL in loopback mode.
   */
  readonly url: string;
}

/** The MISO agent link from one node to another (static discovery). */
export interface AgentLinkPlan extends ProxyPlan {
  /**
   * host:port under which `from`'s agent reaches `to`'s agent (its MISO_PEERS entry): `to`'s own
   * agent address, redirected to the link in netns mode; the proxy in loopback mode.
   */
  readonly address: string;
}

export interface MeshPlan {
  readonly name: string;
  readonly isolation: Isolation;
  /** 10.a.b.0/24 (netns) or null (loopback). */
  readonly subnet: string | null;
  /** Bridge (netns) or null. */
  readonly bridge: string | null;
  /** Address of the host on the bridge (netns) or 127.0.0.1. */
  readonly hostAddr: string;
  /** Loopback mode: first port of the mesh's range; null in netns mode. */
  readonly portBase: number | null;
  readonly toxiproxyApi: { readonly host: string; readonly port: number };
  readonly stateDir: string;
  readonly nodes: readonly NodePlan[];
  readonly links: readonly LinkPlan[];
  /** The agents' links; empty when no agent runs or the agents find each other by mDNS (direct). */
  readonly agentLinks: readonly AgentLinkPlan[];
}

/** FNV-1a 32-bit: a stable hash of the mesh name. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The subnet a mesh uses unless MESH_SUBNET says otherwise: 10.(100..199).(0..255).0/24 from its name. */
export function defaultSubnet(name: string): string {
  const h = fnv1a(name);
  return `10.${100 + (h % 100)}.${(h >>> 8) % 256}.0/24`;
}

/** Loopback mode: the first port of the mesh's range, from its name (20000..58000). */
export function defaultPortBase(name: string): number {
  return LOOPBACK_PORT_FLOOR + (fnv1a(name) % LOOPBACK_RANGES) * LOOPBACK_PORT_SPAN;
}

export function nodeId(index: number): string {
  return `node-${index}`;
}

/** Parses "node-3" or "3" into 3. */
export function parseNodeRef(ref: string): number | undefined {
  const m = /^(?:node-)?(\d{1,2})$/.exec(ref.trim());
  return m ? Number(m[1]) : undefined;
}

export interface PlanInput {
  readonly name: string;
  readonly nodes: number;
  readonly isolation: Isolation;
  readonly subnet?: string | undefined;
  readonly portBase?: number | undefined;
  readonly stateRoot: string;
  /**
   * The MISO agents reach each other through link proxies (static peers), so the link profile
   * and cuts apply to them as to the functions. False when no agent runs, or with mDNS discovery
   * (the agents dial the addresses they find: direct). Default false.
   */
  readonly agentLinks?: boolean | undefined;
}

export function planMesh(input: PlanInput): MeshPlan {
  const { name, nodes: n, isolation } = input;
  const stateDir = join(input.stateRoot, name);
  const nodeList: NodePlan[] = [];
  const links: LinkPlan[] = [];
  const agentLinks: AgentLinkPlan[] = [];
  if (isolation === 'netns') {
    const subnet = input.subnet ?? defaultSubnet(name);
    const prefix = subnet.replace(/\.0\/24$/, '');
    const hostAddr = `${prefix}.1`;
    const bridge = `${name}-br`;
    for (let i = 1; i <= n; i++) {
      const addr = `${prefix}.${10 + i}`;
      nodeList.push({
        index: i,
        id: nodeId(i),
        netns: `${name}-n${i}`,
        hostIf: `${name}-h${i}`,
        addr,
        mongoPort: DEFAULT_MONGO_PORT,
        functionPort: DEFAULT_FUNCTION_PORT,
        agentPort: DEFAULT_AGENT_PORT,
        listenerPort: DEFAULT_LISTENER_HEALTH_PORT,
        functionUrl: `http://${addr}:${DEFAULT_FUNCTION_PORT}${FUNCTION_PATH}`,
        mongoUri: `mongodb://${addr}:${DEFAULT_MONGO_PORT}/?directConnection=true`,
        localMongoUri: `mongodb://127.0.0.1:${DEFAULT_MONGO_PORT}/?directConnection=true`,
        dir: join(stateDir, 'nodes', nodeId(i)),
      });
    }
    for (const a of nodeList) {
      for (const b of nodeList) {
        if (a === b) continue;
        links.push(link(a, b, hostAddr, NETNS_PROXY_PORT_BASE + a.index * 100 + b.index, true));
        if (input.agentLinks) agentLinks.push(agentLink(a, b, hostAddr, NETNS_AGENT_PROXY_PORT_BASE + a.index * 100 + b.index, true));
      }
    }
    return {
      name,
      isolation,
      subnet,
      bridge,
      hostAddr,
      portBase: null,
      toxiproxyApi: { host: hostAddr, port: TOXIPROXY_API_PORT },
      stateDir,
      nodes: nodeList,
      links,
      agentLinks,
    };
  }
  const base = input.portBase ?? defaultPortBase(name);
  const host = '127.0.0.1';
  for (let i = 1; i <= n; i++) {
    const functionPort = base + i;
    const mongoPort = base + 100 + i;
    nodeList.push({
      index: i,
      id: nodeId(i),
      netns: null,
      hostIf: null,
      addr: host,
      mongoPort,
      functionPort,
      agentPort: base + 200 + i,
      listenerPort: base + 300 + i,
      functionUrl: `http://${host}:${functionPort}${FUNCTION_PATH}`,
      mongoUri: `mongodb://${host}:${mongoPort}/?directConnection=true`,
      localMongoUri: `mongodb://${host}:${mongoPort}/?directConnection=true`,
      dir: join(stateDir, 'nodes', nodeId(i)),
    });
  }
  for (const a of nodeList) {
    for (const b of nodeList) {
      if (a === b) continue;
      links.push(link(a, b, host, base + 1000 + a.index * 32 + b.index, false));
      if (input.agentLinks) agentLinks.push(agentLink(a, b, host, base + 2000 + a.index * 32 + b.index, false));
    }
  }
  return {
    name,
    isolation,
    subnet: null,
    bridge: null,
    hostAddr: host,
    portBase: base,
    toxiproxyApi: { host, port: base + 999 },
    stateDir,
    nodes: nodeList,
    links,
    agentLinks,
  };
}

function link(a: NodePlan, b: NodePlan, listenHost: string, listenPort: number, redirected: boolean): LinkPlan {
  return {
    name: `${a.id}>${b.id}`,
    from: a.index,
    to: b.index,
    listenHost,
    listenPort,
    upstream: `${b.addr}:${b.functionPort}`,
    redirected,
    url: redirected ? b.functionUrl : `http://${listenHost}:${listenPort}${FUNCTION_PATH}`,
  };
}

function agentLink(a: NodePlan, b: NodePlan, listenHost: string, listenPort: number, redirected: boolean): AgentLinkPlan {
  const upstream = `${b.addr}:${b.agentPort}`;
  return {
    name: `${a.id}>${b.id}:agent`,
    from: a.index,
    to: b.index,
    listenHost,
    listenPort,
    upstream,
    redirected,
    address: redirected ? upstream : `${listenHost}:${listenPort}`,
  };
}

/** Where a proxy listens (host:port). */
export function proxyAddress(p: ProxyPlan): string {
  return `${p.listenHost}:${p.listenPort}`;
}

/** Every proxy of the mesh: the function links, then the agent links. Profiles and cuts apply to all of them. */
export function linkProxies(plan: MeshPlan): ProxyPlan[] {
  return [...plan.links, ...plan.agentLinks];
}

/** Every host port the mesh listens on (toxiproxy API and proxies), with what it is for. */
export function hostPorts(plan: MeshPlan): { host: string; port: number; what: string }[] {
  const ports = [{ host: plan.toxiproxyApi.host, port: plan.toxiproxyApi.port, what: 'toxiproxy API' }];
  for (const l of linkProxies(plan)) ports.push({ host: l.listenHost, port: l.listenPort, what: `link ${l.name}` });
  if (plan.isolation === 'loopback') {
    for (const n of plan.nodes) {
      ports.push({ host: n.addr, port: n.functionPort, what: `${n.id} function` });
      ports.push({ host: n.addr, port: n.mongoPort, what: `${n.id} MongoDB` });
    }
  }
  return ports;
}

/** Every kernel object name (namespaces, interfaces) the mesh creates. */
export function kernelNames(plan: MeshPlan): { netns: string[]; links: string[] } {
  const netns = plan.nodes.flatMap((n) => (n.netns ? [n.netns] : []));
  const links = [...(plan.bridge ? [plan.bridge] : []), ...plan.nodes.flatMap((n) => (n.hostIf ? [n.hostIf] : []))];
  return { netns, links };
}

/** Does 10.a.b.0/24 overlap `cidr` (any IPv4 prefix)? */
export function overlaps(subnet: string, cidr: string): boolean {
  const [aAddr, aLen] = splitCidr(subnet);
  const [bAddr, bLen] = splitCidr(cidr);
  const len = Math.min(aLen, bLen);
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
  return (aAddr & mask) >>> 0 === (bAddr & mask) >>> 0;
}

function splitCidr(cidr: string): [number, number] {
  const [addr, len] = cidr.includes('/') ? cidr.split('/') : [cidr, '32'];
  const parts = (addr ?? '').split('.').map(Number);
  const value = (((parts[0] ?? 0) << 24) | ((parts[1] ?? 0) << 16) | ((parts[2] ?? 0) << 8) | (parts[3] ?? 0)) >>> 0;
  return [value, Number(len)];
}
