/**
 * Node discovery by mDNS / DNS-SD (multicast-dns, pure JS). Each agent is a DNS-SD service
 * instance `<label>._miso._tcp.local` (RFC 6763) with:
 *   - PTR `_miso._tcp.local` -> instance (shared record), and PTR `_services._dns-sd._udp.local`
 *     -> `_miso._tcp.local` for service type enumeration (RFC 6763 §9, `avahi-browse -a`);
 *   - SRV instance -> port and target `<label>.miso.local` (unique record: cache-flush bit set);
 *   - TXT instance `node=<node id>` (unique);
 *   - A `<label>.miso.local` for each IPv4 address (unique).
 * `<label>` is the node id made a valid DNS label (see `dnsLabel`); the node id itself travels in
 * the TXT record. Host names live under `miso.local` so they never clash with the host name Avahi
 * publishes for the machine itself (`<hostname>.local`).
 *
 * The responder answers questions for any of these names and types (PTR, SRV, TXT, A, ANY), the
 * way Avahi's resolver asks (`avahi-browse -r _miso._tcp`, `avahi-resolve -n <label>.miso.local`):
 * PTR answers carry SRV, TXT and A as additional records (RFC 6763 §12.1), SRV answers carry A
 * (§12.2). Answers that hold a shared record wait 20-120 ms (RFC 6762 §6). A query from a port
 * other than 5353 (a legacy one-shot resolver such as `dig -p 5353 @224.0.0.251`) is answered by
 * unicast with its id and question echoed, no cache-flush bits and a TTL of at most 10 s
 * (RFC 6762 §6.7). On start the agent announces twice, 1 s apart (§8.3); on stop it sends a
 * goodbye (TTL 0, §10.1). Probing for name conflicts (§8.1) is not done: node ids are unique
 * within a mesh by construction.
 *
 * Liveness: the agent queries for `_miso._tcp.local` every QUERY_INTERVAL_MS and reports a peer's
 * address (`a.b.c.d:port`) when first seen and when it expires (no answer for
 * EXPIRE_AFTER_QUERIES periods, or a goodbye). A dead peer's streams are dropped sooner by the
 * agent's heartbeats; mDNS expiry only stops re-dialling it.
 *
 * The socket binds 0.0.0.0:5353 and joins 224.0.0.251 on the chosen interface only: a socket
 * bound to the interface's unicast address would never receive the multicast queries.
 * For networks without multicast (cloud VPCs) use MISO_PEERS instead. Never enable this in the
 * host network namespace of a shared machine.
 */
import { networkInterfaces } from 'node:os';
import type { RemoteInfo } from 'node:dgram';
import makeMdns from 'multicast-dns';
import { MisoError } from '../errors.js';
import type { Logger } from '@syncmesh-edge/log';

export const SERVICE_TYPE = '_miso._tcp.local';
/** DNS-SD service type enumeration (RFC 6763 §9). */
export const SERVICES_ENUMERATION = '_services._dns-sd._udp.local';
/** Host names of agents live under this domain, not directly under `.local`. */
export const HOST_DOMAIN = 'miso.local';
/** The mDNS port; queries from any other port are legacy unicast queries (RFC 6762 §6.7). */
export const MDNS_PORT = 5353;
/** How often we query for peers. */
export const QUERY_INTERVAL_MS = 2_000;
/** A peer not seen in this many query periods is gone. */
export const EXPIRE_AFTER_QUERIES = 3;
/** TTL of our records (seconds). */
export const RECORD_TTL_S = 120;
/** Maximum TTL in answers to legacy unicast queries (RFC 6762 §6.7). */
export const LEGACY_TTL_S = 10;
/** Random delay of answers holding a shared record (RFC 6762 §6). */
export const SHARED_ANSWER_DELAY_MS = [20, 120] as const;
/** Delay of the second announcement (RFC 6762 §8.3: at least one second after the first). */
export const SECOND_ANNOUNCEMENT_MS = 1_000;
/** Longest DNS label (RFC 1035 §2.3.4). */
export const MAX_LABEL_BYTES = 63;

export interface MdnsRecord {
  name: string;
  type: string;
  ttl?: number;
  flush?: boolean;
  data?: unknown;
}

export interface MdnsQuestion {
  name: string;
  type: string;
}

/**
 * A node id as one DNS label: characters other than letters, digits and '-' become '-' (a '.'
 * would split the label, and multicast-dns cannot escape it), at most 63 bytes.
 */
export function dnsLabel(nodeId: string): string {
  return nodeId.replace(/[^A-Za-z0-9-]/g, '-').slice(0, MAX_LABEL_BYTES);
}

export function instanceName(nodeId: string): string {
  return `${dnsLabel(nodeId)}.${SERVICE_TYPE}`;
}

export function hostName(nodeId: string): string {
  return `${dnsLabel(nodeId)}.${HOST_DOMAIN}`;
}

/**
 * The DNS-SD records announcing one agent (all in the answer section: an unsolicited
 * announcement). TTL 0 = goodbye.
 */
export function announcement(nodeId: string, port: number, ips: string[], ttl = RECORD_TTL_S): MdnsRecord[] {
  const instance = instanceName(nodeId);
  const host = hostName(nodeId);
  return [
    { name: SERVICE_TYPE, type: 'PTR', ttl, data: instance },
    { name: instance, type: 'SRV', ttl, flush: true, data: { port, target: host, priority: 0, weight: 0 } },
    { name: instance, type: 'TXT', ttl, flush: true, data: [Buffer.from(`node=${nodeId}`)] },
    ...ips.map((ip) => ({ name: host, type: 'A', ttl, flush: true, data: ip })),
  ];
}

/** The service type enumeration record (RFC 6763 §9). */
export function enumerationRecord(ttl = RECORD_TTL_S): MdnsRecord {
  return { name: SERVICES_ENUMERATION, type: 'PTR', ttl, data: SERVICE_TYPE };
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * What our records answer to these questions: matching records go to `answers`, and the records
 * a resolver needs next go to `additionals` (RFC 6763 §12). Empty when nothing matches.
 */
export function answersFor(questions: MdnsQuestion[], own: MdnsRecord[]): { answers: MdnsRecord[]; additionals: MdnsRecord[] } {
  const answers: MdnsRecord[] = [];
  const matches = (q: MdnsQuestion, r: MdnsRecord) => same(q.name, r.name) && (q.type === 'ANY' || q.type === r.type);
  const candidates = [enumerationRecord(own[0]?.ttl), ...own];
  for (const q of questions) for (const r of candidates) if (matches(q, r) && !answers.includes(r)) answers.push(r);
  const additionals: MdnsRecord[] = [];
  const add = (r: MdnsRecord) => {
    if (!answers.includes(r) && !additionals.includes(r)) additionals.push(r);
  };
  for (const a of answers) {
    if (a.type === 'PTR' && same(a.name, SERVICE_TYPE)) own.filter((r) => r.type !== 'PTR').forEach(add); // §12.1
    if (a.type === 'SRV') own.filter((r) => r.type === 'A').forEach(add); // §12.2
  }
  return { answers, additionals };
}

export interface FoundPeer {
  nodeId: string;
  address: string;
  goodbye: boolean;
}

/** The node id in a TXT record (`node=<id>`), if any. */
function txtNodeId(data: unknown): string | undefined {
  const strings = Array.isArray(data) ? data : [data];
  for (const s of strings) {
    const text = Buffer.isBuffer(s) ? s.toString('utf8') : typeof s === 'string' ? s : '';
    if (text.startsWith('node=')) return text.slice('node='.length);
  }
  return undefined;
}

/** Peers announced in one response packet (answers + additionals). Names compare case-insensitively. */
export function peersIn(records: MdnsRecord[]): FoundPeer[] {
  const suffix = `.${SERVICE_TYPE}`.toLowerCase();
  const srv = new Map<string, { port: number; target: string; ttl: number }>();
  const txt = new Map<string, string>();
  const a = new Map<string, string[]>();
  for (const r of records) {
    const name = r.name.toLowerCase();
    if (r.type === 'SRV' && name.endsWith(suffix)) {
      const d = r.data as { port: number; target: string };
      srv.set(name, { port: d.port, target: d.target.toLowerCase(), ttl: r.ttl ?? RECORD_TTL_S });
    } else if (r.type === 'TXT' && name.endsWith(suffix)) {
      const id = txtNodeId(r.data);
      if (id) txt.set(name, id);
    } else if (r.type === 'A') {
      const list = a.get(name) ?? [];
      list.push(String(r.data));
      a.set(name, list);
    }
  }
  const out: FoundPeer[] = [];
  for (const [instance, s] of srv) {
    const nodeId = txt.get(instance) ?? instance.slice(0, -suffix.length);
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
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly seen = new Map<string, { nodeId: string; lastMs: number }>();

  constructor(private readonly opts: MdnsOptions) {}

  /** Opens the socket, announces and starts querying. Throws EDGE_MISO_CONFIG when the interface has no IPv4 address. */
  start(): void {
    if (this.mdns) return;
    const iface = this.opts.interface;
    const ip = iface ? localIPv4(iface)[0] : undefined;
    if (iface && !ip && !this.opts.mdnsOptions?.socket) {
      throw new MisoError(
        'EDGE_MISO_CONFIG',
        `invalid agent configuration: MISO_MDNS_INTERFACE: interface '${iface}' has no IPv4 address (interfaces with one: ${localIPv4().join(', ') || 'none'})`,
      );
    }
    // bind 0.0.0.0: multicast-dns binds to the interface address by default, which receives no multicast
    this.mdns = makeMdns({ ...(ip ? { interface: ip, bind: '0.0.0.0' } : {}), ...this.opts.mdnsOptions });
    this.mdns.on('query', (q, rinfo) => this.answer(q.questions as MdnsQuestion[], q.id, rinfo));
    this.mdns.on('response', (r) => {
      const recs = [...r.answers, ...(r.additionals ?? [])] as MdnsRecord[];
      for (const p of peersIn(recs)) this.found(p);
    });
    this.mdns.on('error', (err: Error) => this.opts.log.warn({ err: err.message }, 'mDNS socket error'));
    this.mdns.on('warning', (err: Error) => this.opts.log.debug({ err: err.message }, 'mDNS warning (undecodable packet or membership)'));
    this.opts.log.info({ interface: iface ?? '(all)', address: ip ?? '(all)', instance: instanceName(this.opts.nodeId) }, 'mDNS discovery started');
    this.announce();
    this.later(SECOND_ANNOUNCEMENT_MS, () => this.announce());
    this.query();
    this.timer = setInterval(() => {
      this.query();
      this.expire(Date.now());
    }, QUERY_INTERVAL_MS);
    this.timer.unref();
  }

  private own(ttl: number): MdnsRecord[] {
    return announcement(this.opts.nodeId, this.opts.port, this.opts.addresses ?? localIPv4(this.opts.interface), ttl);
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.timers.add(t);
  }

  /** Announces our records (all as answers, RFC 6762 §8.3) and the service type. */
  private announce(): void {
    this.mdns?.respond({ answers: [...this.own(RECORD_TTL_S), enumerationRecord()] as never });
  }

  private answer(questions: MdnsQuestion[], id: number, rinfo: RemoteInfo): void {
    const legacy = rinfo.port !== MDNS_PORT && this.opts.mdnsOptions?.multicast !== false;
    const own = this.own(legacy ? LEGACY_TTL_S : RECORD_TTL_S);
    const { answers, additionals } = answersFor(questions, own);
    if (answers.length === 0) return;
    if (legacy) {
      const plain = (rs: MdnsRecord[]) => rs.map((r) => ({ ...r, flush: false }));
      this.mdns?.respond({ id, questions, answers: plain(answers), additionals: plain(additionals) } as never, { port: rinfo.port, address: rinfo.address });
      return;
    }
    const send = () => this.mdns?.respond({ answers, additionals } as never);
    if (answers.some((r) => r.type === 'PTR')) {
      const [min, max] = SHARED_ANSWER_DELAY_MS;
      this.later(min + Math.random() * (max - min), send);
    } else {
      send();
    }
  }

  private query(): void {
    this.mdns?.query({ questions: [{ name: SERVICE_TYPE, type: 'PTR' }] });
  }

  private found(p: FoundPeer): void {
    if (p.nodeId === this.opts.nodeId) return;
    if (p.goodbye) {
      if (this.seen.delete(p.address)) {
        this.opts.log.info({ peer: p.nodeId, address: p.address }, 'peer said goodbye by mDNS');
        this.opts.onGone(p.address, p.nodeId);
      }
      return;
    }
    const before = this.seen.get(p.address);
    if (before && before.nodeId !== p.nodeId) {
      // Another node id at a known address (a node re-created with a new id): the dialer there
      // expects the old id, so forget it and dial again expecting the new one.
      this.opts.log.info({ peer: before.nodeId, now: p.nodeId, address: p.address }, 'the node id announced at an address changed');
      this.seen.delete(p.address);
      this.opts.onGone(p.address, before.nodeId);
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

  /**
   * Sends a goodbye (TTL 0; not for the service type, which other agents share), then closes the
   * socket. Safe to call twice. The socket closes only
   * once the goodbye is sent: multicast-dns sends on a later tick and drops anything sent after
   * destroy(). Resolves when the socket is closed.
   */
  stop(): Promise<void> {
    const m = this.mdns;
    if (!m) return Promise.resolve();
    this.mdns = undefined;
    if (this.timer) clearInterval(this.timer);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    return new Promise((resolve) => {
      m.respond({ answers: this.own(0) as never }, () => m.destroy(() => resolve()));
    });
  }
}
