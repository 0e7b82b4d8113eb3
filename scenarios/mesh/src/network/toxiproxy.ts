/**
 * The mesh's link emulator: ONE toxiproxy process in the host namespace holds one proxy per
 * directed node pair and service (the function, and the MISO agent with static discovery). A
 * node reaches a peer only through its proxies, so toxics on them (latency, jitter, bandwidth,
 * loss, cut) apply to exactly that direction of that pair; both proxies of a pair get the same. The HTTP
 * client is the lab's (`@syncmesh-edge/lab`); this adds the mesh's link plans and latency model.
 */
import { Toxiproxy } from '@syncmesh-edge/lab';
import { toxicsFor, type LinkShape } from './latency.js';
import type { ProxyPlan } from '../plan/plan.js';

export class ToxiproxyClient extends Toxiproxy {
  constructor(host: string, port: number) {
    super(`http://${host}:${port}`);
  }

  /** Creates (or replaces) the proxies of all links in one request. */
  async createLinks(links: readonly ProxyPlan[]): Promise<void> {
    await this.createProxies(links.map((l) => ({ name: l.name, listen: `${l.listenHost}:${l.listenPort}`, upstream: l.upstream })));
  }

  /** Replaces the profile toxics (latency, bandwidth, loss) of every link; cut toxics stay. */
  async applyShapes(links: readonly ProxyPlan[], shapes: readonly LinkShape[]): Promise<void> {
    const byPair = new Map(shapes.map((s) => [`${s.from}>${s.to}`, s]));
    const byName = new Map(links.map((l) => [l.name, byPair.get(`${l.from}>${l.to}`)]));
    await this.replaceToxics(
      links.map((l) => l.name),
      (name) => {
        const shape = byName.get(name);
        return shape ? [...toxicsFor(shape.upstream, 'upstream'), ...toxicsFor(shape.downstream, 'downstream')] : [];
      },
    );
  }

  /** Blackholes links in both directions: data is held and connections never complete. */
  async cutLinks(links: readonly ProxyPlan[]): Promise<void> {
    await this.cut(links.map((l) => l.name));
  }

  async restoreLinks(links: readonly ProxyPlan[]): Promise<void> {
    await this.restore(links.map((l) => l.name));
  }
}
