/**
 * Node discovery by mDNS / DNS-SD (multicast-dns, pure JS). Each agent announces
 * `<node id>._miso._tcp.local` with SRV (port, target `<node id>.miso.local`), TXT (`node=<id>`)
 * and A records for its IPv4 addresses, the standard DNS-SD shape that Avahi browses
 * (`avahi-browse -r _miso._tcp`) and answers. It queries for `_miso._tcp.local` periodically
 * and reports a peer's address (`a.b.c.d:port`) when first seen and when it expires (no answer
 * for EXPIRE_AFTER_QUERIES periods, or a goodbye with TTL 0).
 *
 * For networks without multicast (cloud VPCs) use MISO_PEERS instead. Never enable this in the
 * host network namespace of a shared machine.
 */
import { networkInterfaces } from 'node:os';
import makeMdns from 'multicast-dns';
import type { Logger } from '../logger.js';

export const SERVICE_TYPE = '_miso._tcp.local';
/** How often we query for peers. */
export const QUERY_INTERVAL_MS = 2_000;
/** A peer not seen in this many query periods is gone. */
export const EXPIRE_AFTER_QUERIES = 3;
/** TTL of our records (seconds). */
export const RECORD_TTL_S = 120;

export interface MdnsRecord {
  name: string;
  type: string;
  ttl?: number;
  data?: unknown;
}

/** The DNS-SD records announcing one agent. TTL 0 = goodbye. */
export function announcement(nodeId: string, port: number, ips: string[], ttl = RECORD_TTL_S): MdnsRecord[] {
  const instance = `${nodeId}.${SERVICE_TYPE}`;
  const host = `${nodeId}.miso.local`;
  return [
    { name: SERVICE_TYPE, type: 'PTR', ttl, data: instance },
    { name: instance, type: 'SRV', ttl, data: { port, target: host, priority: 0, weight: 0 } },
    { name: instance, type: 'TXT', ttl, data: [Buffer.from(`node=${nodeId}`)] },
    ...ips.map((ip) => ({ name: host, type: 'A', ttl, data: ip })),
  ];
}

export interface FoundPeer {
  nodeId: string;
  address: string;
  goodbye: boolean;
}

/** Peers announced in one response packet (answers + additionals). */
export function peersIn(records: MdnsRecord[]): FoundPeer[] {
  const srv = new Map<string, { port: number; target: string; ttl: number }>();
  const a = new Map<string, string[]>();
  for (const r of records) {
    if (r.type === 'SRV' && r.name.endsWith(`.${SERVICE_TYPE}`)) {
      const d = r.data as { port: number; target: string };
      srv.set(r.name, { port: d.port, target: d.target, ttl: r.ttl ?? RECORD_TTL_S });
    } else if (r.type === 'A') {
      const list = a.get(r.name) ?? [];
      list.push(String(r.data));
      a.set(r.name, list);
    }
  }
  const out: FoundPeer[] = [];
  for (const [instance, s] of srv) {
    const nodeId = instance.slice(0, -(SERVICE_TYPE.length + 1));
    for (const ip of a.get(s.target) ?? []) out.push({ nodeId, address: `${ip}:${s.port}`, goodbye: s.ttl === 0 });
  }
  return out;
}

/** Non-internal IPv4 addresses (of one interface when given). */
export function localIPv4(iface?: string): string[] {
  const out: string[] = [];
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    if (iface && name !== iface) continue;
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) out.push(a.address);
  }
  return out;
}

export interface MdnsOptions {
  nodeId: string;
  port: number;
  interface?: string | undefined;
  log: Logger;
  onPeer(address: string, nodeId: string): void;
  onGone(address: string, nodeId: string): void;
  /** Addresses to announce (default: the interface's IPv4 addresses). */
  addresses?: string[];
  /** Overrides for tests (e.g. a unicast loopback socket). */
  mdnsOptions?: makeMdns.Options;
}

export class MdnsDiscovery {
  private mdns: makeMdns.MulticastDNS | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly seen = new Map<string, { nodeId: string; lastMs: number }>();

  constructor(private readonly opts: MdnsOptions) {}

  start(): void {
    if (this.mdns) return;
    const ip = this.opts.interface ? localIPv4(this.opts.interface)[0] : undefined;
    this.mdns = makeMdns({ ...(ip ? { interface: ip } : {}), ...this.opts.mdnsOptions });
    this.mdns.on('query', (q) => {
      const asks = q.questions.some((x) => x.name === SERVICE_TYPE && (x.type === 'PTR' || (x.type as string) === 'ANY'));
      if (asks) this.announce(RECORD_TTL_S);
    });
    this.mdns.on('response', (r) => {
      const recs = [...r.answers, ...(r.additionals ?? [])] as MdnsRecord[];
      for (const p of peersIn(recs)) this.found(p);
    });
    this.mdns.on('error', (err: Error) => this.opts.log.warn({ err: err.message }, 'mDNS socket error'));
    this.announce(RECORD_TTL_S);
    this.query();
    this.timer = setInterval(() => {
      this.query();
      this.expire(Date.now());
    }, QUERY_INTERVAL_MS);
    this.timer.unref();
  }

  private announce(ttl: number): void {
    const recs = announcement(this.opts.nodeId, this.opts.port, this.opts.addresses ?? localIPv4(this.opts.interface), ttl);
    this.mdns?.respond({ answers: recs as never });
  }

  private query(): void {
    this.mdns?.query({ questions: [{ name: SERVICE_TYPE, type: 'PTR' }] });
  }

  private found(p: FoundPeer): void {
    if (p.nodeId === this.opts.nodeId) return;
    if (p.goodbye) {
      if (this.seen.delete(p.address)) this.opts.onGone(p.address, p.nodeId);
      return;
    }
    const isNew = !this.seen.has(p.address);
    this.seen.set(p.address, { nodeId: p.nodeId, lastMs: Date.now() });
    if (isNew) {
      this.opts.log.info({ peer: p.nodeId, address: p.address }, 'peer found by mDNS');
      this.opts.onPeer(p.address, p.nodeId);
    }
  }

  private expire(now: number): void {
    for (const [address, s] of this.seen) {
      if (now - s.lastMs > QUERY_INTERVAL_MS * EXPIRE_AFTER_QUERIES) {
        this.seen.delete(address);
        this.opts.log.info({ peer: s.nodeId, address }, 'peer expired from mDNS');
        this.opts.onGone(address, s.nodeId);
      }
    }
  }

  /** Sends a goodbye (TTL 0) and closes the socket. Safe to call twice. */
  stop(): void {
    if (!this.mdns) return;
    if (this.timer) clearInterval(this.timer);
    this.announce(0);
    const m = this.mdns;
    this.mdns = undefined;
    m.destroy();
  }
}
