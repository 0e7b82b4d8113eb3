/**
 * The mesh's link emulator: ONE toxiproxy process in the host namespace holds one proxy per
 * directed node pair. A node reaches a peer only through its proxy, so toxics on that proxy
 * (latency, jitter, bandwidth, loss, cut) apply to exactly that direction of that pair. The HTTP
 * client is the lab's (`@syncmesh-edge/lab`); this adds the mesh's link plans and latency model.
 */
import { Toxiproxy } from '@syncmesh-edge/lab';
import { toxicsFor, type LinkShape } from './latency.js';
import type { LinkPlan } from './plan.js';

export class ToxiproxyClient extends Toxiproxy {
  constructor(host: string, port: number) {
    super(`http://${host}:${port}`);
  }

  /** Creates (or replaces) the proxies of all links in one request. */
  async createLinks(links: readonly LinkPlan[]): Promise<void> {
    await this.createProxies(links.map((l) => ({ name: l.name, listen: `${l.listenHost}:${l.listenPort}`, upstream: l.upstream })));
  }

  /** Replaces the profile toxics (latency, bandwidth, loss) of every link; cut toxics stay. */
  async applyShapes(links: readonly LinkPlan[], shapes: readonly LinkShape[]): Promise<void> {
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
  async cutLinks(links: readonly LinkPlan[]): Promise<void> {
    await this.cut(links.map((l) => l.name));
  }

  async restoreLinks(links: readonly LinkPlan[]): Promise<void> {
    await this.restore(links.map((l) => l.name));
  }
}
