/** Resolvers of the meta schema: the node registry. */
import { badArgument } from '../errors.js';
import { isHttpUrl } from '../request.js';
import type { MeshNode, NodeInput, NodePatch, NodeRegistry } from '../mesh/registry.js';

export interface MetaContext {
  registry: NodeRegistry;
  /** Copies this node's readings to a node that just subscribed (initial sync). */
  onSubscribed(nodeId: string): Promise<void>;
}

type Args = Record<string, unknown>;

function checkLocation(lat: unknown, lon: unknown): void {
  if (lat !== undefined && lat !== null && !((lat as number) >= -90 && (lat as number) <= 90)) {
    throw badArgument(`lat ${lat} is out of range`, { allowed: '-90 to 90' });
  }
  if (lon !== undefined && lon !== null && !((lon as number) >= -180 && (lon as number) <= 180)) {
    throw badArgument(`lon ${lon} is out of range`, { allowed: '-180 to 180' });
  }
}

function checkAddress(address: unknown): void {
  if (address !== undefined && address !== null && !isHttpUrl(String(address))) {
    throw badArgument(`address '${address}' is not an http(s) URL`, { allowed: 'e.g. http://10.0.0.2:8080/function/syncmesh-fn' });
  }
}

function checkId(id: unknown): string {
  const s = String(id);
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(s)) throw badArgument(`node id '${s}' is not allowed`, { allowed: 'letters, digits and ._:- only, at most 64' });
  return s;
}

export const metaRoot = {
  async nodes(args: Args, ctx: MetaContext): Promise<MeshNode[]> {
    const radius = args['radius'] as number | undefined | null;
    if (radius !== undefined && radius !== null && !(radius >= 0)) throw badArgument(`radius ${radius} must be >= 0`, { allowed: 'km >= 0' });
    const filter: { own_node?: boolean; subscribed?: boolean } = {};
    if (typeof args['own_node'] === 'boolean') filter.own_node = args['own_node'];
    if (typeof args['subscribed'] === 'boolean') filter.subscribed = args['subscribed'];
    const nodes = await ctx.registry.list(filter);
    return radius === undefined || radius === null ? nodes : nodes.filter((n) => n.distance !== null && n.distance <= radius);
  },
  node: (args: Args, ctx: MetaContext) => ctx.registry.get(String(args['id'])),
  ownNode: (_args: Args, ctx: MetaContext) => ctx.registry.own(),
  async addNode(args: Args, ctx: MetaContext) {
    const { initial_sync, ...input } = args['node'] as NodeInput & { initial_sync?: boolean };
    checkId(input.id);
    checkAddress(input.address);
    checkLocation(input.lat, input.lon);
    const node = await ctx.registry.add({ ...input, own_node: input.own_node ?? false, subscribed: input.subscribed ?? false });
    if (node.subscribed && !node.own_node && initial_sync !== false) await ctx.onSubscribed(node.id);
    return node;
  },
  async updateNode(args: Args, ctx: MetaContext) {
    const { initial_sync, ...patch } = args['node'] as NodePatch & { initial_sync?: boolean };
    const id = checkId(args['id']);
    checkAddress(patch.address);
    checkLocation(patch.lat, patch.lon);
    const before = await ctx.registry.get(id);
    const node = await ctx.registry.update(id, patch);
    if (node.subscribed && !before?.subscribed && !node.own_node && initial_sync !== false) await ctx.onSubscribed(node.id);
    return node;
  },
  deleteNode: (args: Args, ctx: MetaContext) => ctx.registry.delete(checkId(args['id'])),
};
