/**
 * The client of toxiproxy's HTTP API, the lab's link emulator: proxies (one per emulated,
 * directed link) and their toxics (latency, jitter, bandwidth, loss, and the timeout toxic that
 * cuts a link). Every call has a deadline; failures are EDGE_LAB_TOXIPROXY with the status and
 * toxiproxy's own text.
 */
import { LabError } from './errors.js';
import { pool } from './sys.js';

/** Request deadline for the toxiproxy API. */
export const TOXIPROXY_API_TIMEOUT_MS = 10_000;
/** Parallel API requests while configuring hundreds of proxies. */
const API_CONCURRENCY = 8;
/** Names of the toxics that cut a link (a blackhole: data is held, connections stay open). */
export const CUT_TOXICS = ['cut_upstream', 'cut_downstream'] as const;

export interface Toxic {
  name: string;
  type: string;
  stream: string;
  toxicity: number;
  attributes: Record<string, number>;
}

export interface ProxySpec {
  name: string;
  /** host:port the proxy listens on. */
  listen: string;
  /** host:port it forwards to. */
  upstream: string;
}

/** Latency toxics in both directions: `latencyMs` one way, ± `jitterMs`. None when both are 0. */
export function latencyToxics(latencyMs: number, jitterMs: number): Toxic[] {
  if (latencyMs <= 0 && jitterMs <= 0) return [];
  return (['upstream', 'downstream'] as const).map((stream) => ({
    name: `latency_${stream}`,
    type: 'latency',
    stream,
    toxicity: 1,
    attributes: { latency: latencyMs, jitter: jitterMs },
  }));
}

export class Toxiproxy {
  /** e.g. http://127.0.0.1:8474 */
  constructor(readonly base: string) {}

  /** `accept`: statuses besides 2xx that mean "already done" for this call (answered as null). */
  private async call(method: string, path: string, body?: unknown, accept: readonly number[] = []): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(TOXIPROXY_API_TIMEOUT_MS),
      });
    } catch (err) {
      throw new LabError('EDGE_LAB_TOXIPROXY', `toxiproxy at ${this.base} did not answer ${method} ${path}: ${(err as Error).message}`, { cause: err });
    }
    const text = await res.text();
    if (accept.includes(res.status)) return null;
    if (!res.ok) throw new LabError('EDGE_LAB_TOXIPROXY', `toxiproxy ${method} ${path} answered ${res.status}: ${text.trim().slice(0, 300)}`);
    return text.length > 0 ? JSON.parse(text) : null;
  }

  async version(): Promise<string> {
    const res = await fetch(`${this.base}/version`, { signal: AbortSignal.timeout(TOXIPROXY_API_TIMEOUT_MS) });
    return (await res.text()).trim();
  }

  /** Creates (or replaces) many proxies in one request. */
  async createProxies(specs: readonly ProxySpec[]): Promise<void> {
    await this.call(
      'POST',
      '/populate',
      specs.map((s) => ({ ...s, enabled: true })),
    );
  }

  /** Creates one proxy with its toxics. */
  async createProxy(spec: ProxySpec, toxics: readonly Toxic[] = []): Promise<void> {
    await this.call('POST', '/proxies', { ...spec, enabled: true });
    for (const t of toxics) await this.addToxic(spec.name, t);
  }

  /** The names of every proxy. */
  async proxyNames(): Promise<string[]> {
    return Object.keys((await this.call('GET', '/proxies')) as Record<string, unknown>).sort();
  }

  /** Removes a proxy; one that is gone already is fine. */
  async removeProxy(name: string): Promise<void> {
    await this.call('DELETE', `/proxies/${encodeURIComponent(name)}`, undefined, [404]);
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

  /** Gives each proxy exactly the toxics `wanted` says (cut toxics stay as they are). */
  async replaceToxics(proxies: readonly string[], wanted: (proxy: string) => readonly Toxic[]): Promise<void> {
    await pool(proxies, API_CONCURRENCY, async (name) => {
      for (const t of await this.toxics(name)) {
        if (!(CUT_TOXICS as readonly string[]).includes(t.name)) await this.removeToxic(name, t.name);
      }
      for (const t of wanted(name)) await this.addToxic(name, t);
    });
  }

  /** Blackholes proxies in both directions: data is held and connections never complete. Idempotent. */
  async cut(proxies: readonly string[]): Promise<void> {
    await pool(proxies, API_CONCURRENCY, async (name) => {
      const have = new Set((await this.toxics(name)).map((t) => t.name));
      for (const stream of ['upstream', 'downstream'] as const) {
        const toxic = `cut_${stream}`;
        // idempotent: a link may be shared with another node that is cut at the same time
        if (!have.has(toxic)) await this.addToxic(name, { name: toxic, type: 'timeout', stream, toxicity: 1, attributes: { timeout: 0 } }, true);
      }
    });
  }

  /** Removes the cut toxics. Idempotent. */
  async restore(proxies: readonly string[]): Promise<void> {
    await pool(proxies, API_CONCURRENCY, async (name) => {
      const have = new Set((await this.toxics(name)).map((t) => t.name));
      for (const toxic of CUT_TOXICS) if (have.has(toxic)) await this.removeToxic(name, toxic, true);
    });
  }
}
