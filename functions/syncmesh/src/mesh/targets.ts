/**
 * Which nodes a query is forwarded to: `external_nodes` (mesh members only, see peers.ts;
 * anything else is refused with 400 before any node is contacted), then (with `use_meta_data`)
 * registry nodes within the radius, nearest first. Each URL once; never this node itself.
 */
import type { Config } from '../config.js';
import { SyncmeshError } from '../errors.js';
import type { SyncmeshRequest } from '../request.js';
import type { Target } from './forward.js';
import { admitPeer, systemResolver, type Resolver } from './peers.js';
import type { NodeRegistry } from './registry.js';

export interface TargetDeps {
  config: Config;
  registry: NodeRegistry;
  /** The port this node's server listens on (external_nodes never reach it on an own address). */
  selfPort?: (() => number | undefined) | undefined;
  /** Resolves peer host names; the system resolver by default. */
  resolve?: Resolver | undefined;
}

const urlKey = (url: string) => url.replace(/\/+$/, '');

export async function selectTargets(req: SyncmeshRequest, deps: TargetDeps): Promise<Target[]> {
  const { config } = deps;
  const targets = new Map<string, Target>();
  const add = (t: Target) => {
    const key = urlKey(t.url);
    if (!targets.has(key)) targets.set(key, t);
  };
  const nodes = req.externalNodes.length > 0 || req.useMetaData ? await deps.registry.list() : [];
  if (req.externalNodes.length > 0) {
    const ctx = {
      registry: nodes,
      ownNodeId: config.nodeId,
      selfPort: deps.selfPort?.(),
      selfHost: config.host,
      allowed: config.allowedPeers,
      resolve: deps.resolve ?? systemResolver,
    };
    const admitted = await Promise.all(req.externalNodes.map((url) => admitPeer(url, ctx)));
    for (const peer of admitted) add(peer);
  }
  if (req.useMetaData) {
    const own = nodes.find((n) => n.own_node);
    if (req.radius !== undefined && !own) {
      throw new SyncmeshError(
        'EDGE_SYNCMESH_NO_OWN_NODE',
        "radius needs this node's location, but the registry has no own node; add it with a meta request: addNode(node: {id, address, lat, lon, own_node: true})",
      );
    }
    for (const n of nodes) {
      if (n.own_node) continue;
      if (req.radius !== undefined && (n.distance === null || n.distance > req.radius)) continue;
      if (n.id === config.nodeId) continue;
      add({ url: n.address, nodeId: n.id, distanceKm: n.distance });
    }
    if (own) targets.delete(urlKey(own.address));
  }
  return [...targets.values()];
}
