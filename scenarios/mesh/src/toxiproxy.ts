/**
 * The link emulator: ONE toxiproxy process in the host namespace holds one proxy per directed
 * node pair. A node reaches a peer only through its proxy, so toxics on that proxy (latency,
 * jitter, bandwidth, loss, cut) apply to exactly that direction of that pair.
 */
import { MeshError } from './errors.js';
import { toxicsFor, type LinkShape } from './latency.js';
import type { LinkPlan } from './plan.js';
import { pool } from './sys.js';

/** Request deadline for the toxiproxy API. */
const API_TIMEOUT_MS = 10_000;
/** Parallel API requests while configuring hundreds of proxies. */
const API_CONCURRENCY = 8;
/** Names of the toxics that cut a node off (a blackhole: data is held, connections stay open). */
const CUT_TOXICS = ['cut_upstream', 'cut_downstream'] as const;

export interface Toxic {
  name: string;
  type: string;
  stream: string;
  toxicity: number;
  attributes: Record<string, number>;
}

export class ToxiproxyClient {
  readonly base: string;

  constructor(host: string, port: number) {
    this.base = `http://${host}:${port}`;
  }

  /** `accept`: statuses besides 2xx that mean "already done" for this call (answered as null). */
  private async call(method: string, path: string, body?: unknown, accept: readonly number[] = []): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(API_TIMEOUT_MS),
      });
    } catch (err) {
      throw new MeshError('EDGE_MESH_TOXIPROXY', `toxiproxy at ${this.base} did not answer ${method} ${path}: ${(err as Error).message}`, { cause: err });
    }
    const text = await res.text();
    if (accept.includes(res.status)) return null;
    if (!res.ok) throw new MeshError('EDGE_MESH_TOXIPROXY', `toxiproxy ${method} ${path} answered ${res.status}: ${text.trim()}`);
    return text.length > 0 ? JSON.parse(text) : null;
  }

  async version(): Promise<string> {
    const res = await fetch(`${this.base}/version`, { signal: AbortSignal.timeout(API_TIMEOUT_MS) });
    return (await res.text()).trim();
  }

  /** Creates (or replaces) the proxies of all links in one request. */
  async createLinks(links: readonly LinkPlan[]): Promise<void> {
    const body = links.map((l) => ({ name: l.name, listen: `${l.listenHost}:${l.listenPort}`, upstream: l.upstream, enabled: true }));
    await this.call('POST', '/populate', body);
  }

  async toxics(proxy: string): Promise<Toxic[]> {
    return (await this.call('GET', `/proxies/${encodeURIComponent(proxy)}/toxics`)) as Toxic[];
  }

  /** `idempotent`: a toxic of that name that exists already (409) is fine. */
  async addToxic(proxy: string, toxic: Toxic, idempotent = false): Promise<void> {
    await this.call('POST', `/proxies/${encodeURIComponent(proxy)}/toxics`, toxic, idempotent ? [409] : []);
  }

  /** `idempotent`: a toxic that is gone already (404) is fine. */
  async removeToxic(proxy: string, name: string, idempotent = false): Promise<void> {
    await this.call('DELETE', `/proxies/${encodeURIComponent(proxy)}/toxics/${encodeURIComponent(name)}`, undefined, idempotent ? [404] : []);
  }

  /** Replaces the profile toxics (latency, bandwidth, loss) of every link; cut toxics stay. */
  async applyShapes(links: readonly LinkPlan[], shapes: readonly LinkShape[]): Promise<void> {
    const byPair = new Map(shapes.map((s) => [`${s.from}>${s.to}`, s]));
    await pool(links, API_CONCURRENCY, async (l) => {
      const shape = byPair.get(`${l.from}>${l.to}`);
      const wanted = shape ? [...toxicsFor(shape.upstream, 'upstream'), ...toxicsFor(shape.downstream, 'downstream')] : [];
      const existing = await this.toxics(l.name);
      for (const t of existing) {
        if (!(CUT_TOXICS as readonly string[]).includes(t.name)) await this.removeToxic(l.name, t.name);
      }
      for (const t of wanted) await this.addToxic(l.name, t);
    });
  }

  /** Blackholes links in both directions: data is held and connections never complete. */
  async cut(links: readonly LinkPlan[]): Promise<void> {
    await pool(links, API_CONCURRENCY, async (l) => {
      const have = new Set((await this.toxics(l.name)).map((t) => t.name));
      for (const stream of ['upstream', 'downstream'] as const) {
        const name = `cut_${stream}`;
        // idempotent: the link is shared with another node that may be cut at the same time
        if (!have.has(name)) await this.addToxic(l.name, { name, type: 'timeout', stream, toxicity: 1, attributes: { timeout: 0 } }, true);
      }
    });
  }

  async restore(links: readonly LinkPlan[]): Promise<void> {
    await pool(links, API_CONCURRENCY, async (l) => {
      const have = new Set((await this.toxics(l.name)).map((t) => t.name));
      for (const name of CUT_TOXICS) if (have.has(name)) await this.removeToxic(l.name, name, true);
    });
  }
}
