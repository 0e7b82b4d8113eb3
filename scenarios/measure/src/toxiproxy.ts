/**
 * The baseline's emulated links, added to the mesh's own toxiproxy: node i -> central server
 * (ingest) and client -> central server (queries), with the same latency model as the mesh's
 * links (see centralShape in central.ts).
 */
import { ScenarioError } from './errors.js';

const API_TIMEOUT_MS = 5_000;

export interface ProxySpec {
  name: string;
  listen: string;
  upstream: string;
  /** One-way latency and jitter in ms, applied in both directions. */
  latencyMs: number;
  jitterMs: number;
}

export class ToxiproxyApi {
  constructor(readonly base: string) {}

  private async call(method: string, path: string, body?: unknown): Promise<void> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(API_TIMEOUT_MS),
      });
    } catch (err) {
      throw new ScenarioError('EDGE_SCENARIO_TOXIPROXY', `toxiproxy ${method} ${this.base}${path} failed: ${(err as Error).message}`, { cause: err });
    }
    const text = await res.text();
    if (!res.ok && !(method === 'DELETE' && res.status === 404)) {
      throw new ScenarioError('EDGE_SCENARIO_TOXIPROXY', `toxiproxy ${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
    }
  }

  async create(spec: ProxySpec): Promise<void> {
    await this.call('POST', '/proxies', { name: spec.name, listen: spec.listen, upstream: spec.upstream, enabled: true });
    if (spec.latencyMs > 0 || spec.jitterMs > 0) {
      for (const stream of ['upstream', 'downstream']) {
        await this.call('POST', `/proxies/${encodeURIComponent(spec.name)}/toxics`, {
          name: `latency_${stream}`,
          type: 'latency',
          stream,
          toxicity: 1,
          attributes: { latency: spec.latencyMs, jitter: spec.jitterMs },
        });
      }
    }
  }

  async remove(name: string): Promise<void> {
    await this.call('DELETE', `/proxies/${encodeURIComponent(name)}`);
  }
}
