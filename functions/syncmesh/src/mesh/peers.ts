/**
 * Who `external_nodes` may name: members of the mesh only.
 *
 * A URL is admitted when
 *  1. it is a node of this node's registry (same URL, or same scheme, host and port as a
 *     registry address): the request then goes to the registry's address, signed for that
 *     node's id; or
 *  2. every address its host resolves to is in `SYNCMESH_ALLOWED_PEERS` (host:port, host or
 *     CIDR entries set at provisioning) and none is special (loopback, unspecified, link-local,
 *     multicast, reserved) or one of this machine's own addresses; its node id is the registry
 *     node at the same address and port (a signature binds the target's id).
 * Never this node itself. Host names are resolved here, once, and the call connects to the
 * checked address (no second lookup that could answer differently); redirects are never
 * followed (`node:http` does not). Everything else is refused before anything is contacted.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { SyncmeshError } from '../errors.js';
import type { MeshNode } from './registry.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address (an IP literal resolves to itself). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export interface AllowedPeers {
  /** The entries as configured (for messages). */
  readonly entries: readonly string[];
  readonly hosts: ReadonlySet<string>;
  readonly hostPorts: ReadonlySet<string>;
  readonly networks: BlockList;
  readonly hasNetworks: boolean;
}

/** A peer admitted for one request. */
export interface AdmittedPeer {
  /** Where the request goes (the registry's address for registry members). */
  url: string;
  /** The registry id the request is signed for; undefined: allowed, but not in the registry. */
  nodeId: string | undefined;
  /** The checked address the call connects to. */
  address: ResolvedAddress;
  distanceKm?: number | null | undefined;
}

export interface PeerContext {
  registry: readonly MeshNode[];
  ownNodeId: string;
  /** The port this server listens on, when known: never forward to it on an own address. */
  selfPort: number | undefined;
  /** The address it listens on (HOST); unspecified (0.0.0.0, ::) means every own address. */
  selfHost?: string | undefined;
  allowed: AllowedPeers;
  resolve: Resolver;
}

const SPECIAL = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata endpoints live here)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  SPECIAL.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  SPECIAL.addSubnet(net, prefix, 'ipv6');
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/;

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.2) as its IPv4 address; others unchanged. */
export function canonicalAddress(address: string): ResolvedAddress {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1]!, family: 4 };
  return { address: address.toLowerCase(), family: isIP(address) === 6 ? 6 : 4 };
}

const familyName = (a: ResolvedAddress) => (a.family === 6 ? 'ipv6' : 'ipv4');

/** Loopback, unspecified, link-local, multicast or reserved. */
export function isSpecialAddress(a: ResolvedAddress): boolean {
  return SPECIAL.check(a.address, familyName(a));
}

/** This machine's own interface addresses (loopback included). */
export function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) out.add(canonicalAddress(i.address).address);
  return out;
}

/** The default resolver: the system's resolver, every address. */
export const systemResolver: Resolver = async (host) => {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare)) return [canonicalAddress(bare)];
  const found = await dnsLookup(bare, { all: true, verbatim: true });
  return found.map((f) => canonicalAddress(f.address));
};

/**
 * Parses `SYNCMESH_ALLOWED_PEERS`: comma-separated `host:port`, `host`, `address/prefix`, or a URL
 * (its host and port are taken). Empty: only the registry's nodes. Throws naming a bad entry.
 */
export function parseAllowedPeers(raw: string): AllowedPeers {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const hosts = new Set<string>();
  const hostPorts = new Set<string>();
  const networks = new BlockList();
  let hasNetworks = false;
  for (const entry of entries) {
    const bad = (why: string) => new Error(`'${entry}' ${why}; use host:port, host, or address/prefix (e.g. 10.0.0.0/24), comma-separated`);
    if (/^https?:\/\//i.test(entry)) {
      if (!URL.canParse(entry)) throw bad('is not a URL');
      const u = new URL(entry);
      hostPorts.add(`${u.hostname.replace(/^\[|\]$/g, '')}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`);
      continue;
    }
    const cidr = /^([^/]+)\/(\d{1,3})$/.exec(entry);
    if (cidr) {
      const family = isIP(cidr[1]!);
      const prefix = Number(cidr[2]);
      if (family === 0 || prefix > (family === 4 ? 32 : 128)) throw bad('is not a valid network');
      networks.addSubnet(canonicalAddress(cidr[1]!).address, prefix, family === 4 ? 'ipv4' : 'ipv6');
      hasNetworks = true;
      continue;
    }
    const v6 = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(entry);
    const hp = v6 ?? /^([^:]+):(\d{1,5})$/.exec(entry);
    if (hp) {
      const host = hp[1]!.toLowerCase();
      const port = Number(hp[2]);
      if (port < 1 || port > 65535 || !(isIP(host) || HOST_NAME.test(host))) throw bad('is not a valid host:port');
      hostPorts.add(`${isIP(host) ? canonicalAddress(host).address : host}:${port}`);
      continue;
    }
    const host = entry.toLowerCase();
    if (!(isIP(host) || HOST_NAME.test(host))) throw bad('is not a host name or address');
    hosts.add(isIP(host) ? canonicalAddress(host).address : host);
  }
  return Object.freeze({ entries: Object.freeze(entries), hosts, hostPorts, networks, hasNetworks });
}

const trimSlash = (s: string) => s.replace(/\/+$/, '');
const portOf = (u: URL) => u.port || (u.protocol === 'https:' ? '443' : '80');
const bareHost = (u: URL) => u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
const originOf = (u: URL) => `${u.protocol}//${bareHost(u)}:${portOf(u)}`;

function notAllowed(url: string, why: string, allowed: AllowedPeers): SyncmeshError {
  return new SyncmeshError('EDGE_SYNCMESH_PEER_NOT_ALLOWED', `external_nodes: '${url.slice(0, 200)}' ${why}`, {
    details: {
      allowed: `nodes of this node's registry (meta query { nodes { id address } })${allowed.entries.length ? ` or addresses in SYNCMESH_ALLOWED_PEERS (${allowed.entries.join(', ')})` : ''}; never this node itself, loopback, link-local or other special addresses`,
    },
  });
}

/** A host name that does not resolve within this is refused (the lookup may go on in the background). */
export const RESOLVE_TIMEOUT_MS = 2_000;

async function resolveOrRefuse(url: string, u: URL, ctx: PeerContext): Promise<ResolvedAddress[]> {
  let addresses: ResolvedAddress[];
  let timer: NodeJS.Timeout | undefined;
  try {
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from the resolver within ${RESOLVE_TIMEOUT_MS} ms`)), RESOLVE_TIMEOUT_MS);
    });
    addresses = await Promise.race([ctx.resolve(u.hostname), late]);
  } catch (err) {
    throw new SyncmeshError('EDGE_SYNCMESH_PEER_NOT_ALLOWED', `external_nodes: '${url.slice(0, 200)}': its host name does not resolve`, {
      cause: err,
      details: { allowed: 'host names that resolve to member addresses' },
    });
  } finally {
    clearTimeout(timer);
  }
  if (addresses.length === 0) throw notAllowed(url, 'resolves to no address', ctx.allowed);
  return addresses;
}

/** Whether `a`:`port` is this very server (an own or loopback address on the listening port). */
function isSelf(a: ResolvedAddress, port: string, ctx: PeerContext, own: Set<string>): boolean {
  if (ctx.selfPort === undefined || String(ctx.selfPort) !== port) return false;
  const unspecified = (x: string) => x === '0.0.0.0' || x === '::';
  const bound = ctx.selfHost && isIP(ctx.selfHost) ? canonicalAddress(ctx.selfHost).address : undefined;
  // bound to one address: only that address (or 0.0.0.0, which connects locally) reaches it
  if (bound && !unspecified(bound)) return a.address === bound || unspecified(a.address);
  return isSpecialAddress(a) || own.has(a.address);
}

/**
 * Admits one `external_nodes` URL, or throws EDGE_SYNCMESH_PEER_NOT_ALLOWED saying why. `url` is
 * an http(s) URL already (the envelope checks that).
 */
export async function admitPeer(url: string, ctx: PeerContext): Promise<AdmittedPeer> {
  const u = new URL(url);
  if (u.username || u.password) throw notAllowed(url, 'carries credentials', ctx.allowed);
  const own = ownAddresses();
  const others = ctx.registry.filter((n) => n.id !== ctx.ownNodeId && !n.own_node && URL.canParse(n.address));
  const self = ctx.registry.find((n) => n.id === ctx.ownNodeId || n.own_node);

  // 1. A registry node: same URL, else same scheme, host and port.
  if (self && URL.canParse(self.address) && originOf(new URL(self.address)) === originOf(u)) {
    throw notAllowed(url, 'is this node itself (its own readings are always part of the answer)', ctx.allowed);
  }
  const member = others.find((n) => trimSlash(n.address) === trimSlash(url)) ?? others.find((n) => originOf(new URL(n.address)) === originOf(u));
  if (member) {
    const target = new URL(member.address);
    const addresses = await resolveOrRefuse(url, target, ctx);
    if (addresses.some((a) => isSelf(a, portOf(target), ctx, own))) throw notAllowed(url, 'is this node itself', ctx.allowed);
    return { url: member.address, nodeId: member.id, address: addresses[0]!, distanceKm: member.distance };
  }

  // 2. The allow-list: every address the host resolves to must be a plain member address.
  if (ctx.allowed.entries.length === 0) throw notAllowed(url, 'is not a node of this mesh', ctx.allowed);
  const addresses = await resolveOrRefuse(url, u, ctx);
  const host = bareHost(u);
  const port = portOf(u);
  for (const a of addresses) {
    if (isSpecialAddress(a) || own.has(a.address)) throw notAllowed(url, 'resolves to a loopback, link-local, special or own address', ctx.allowed);
    const listed =
      ctx.allowed.hostPorts.has(`${host}:${port}`) ||
      ctx.allowed.hostPorts.has(`${a.address}:${port}`) ||
      ctx.allowed.hosts.has(host) ||
      ctx.allowed.hosts.has(a.address) ||
      (ctx.allowed.hasNetworks && ctx.allowed.networks.check(a.address, familyName(a)));
    if (!listed) throw notAllowed(url, 'is not a node of this mesh', ctx.allowed);
  }
  // Its node id: the registry node at the same address and port.
  const addressSet = new Set(addresses.map((a) => a.address));
  let nodeId: string | undefined;
  for (const n of others) {
    const nu = new URL(n.address);
    if (portOf(nu) !== port || nu.protocol !== u.protocol) continue;
    const theirs = await ctx.resolve(nu.hostname).catch(() => [] as ResolvedAddress[]);
    if (theirs.some((a) => addressSet.has(a.address))) {
      nodeId = n.id;
      break;
    }
  }
  return { url, nodeId, address: addresses[0]! };
}
