/**
 * The node registry ("meta" data): every node this node knows, in `syncmesh_meta.nodes`.
 * Exactly one entry is the own node. `distance` (km from the own node) is stored and recomputed
 * whenever the own node's or that node's location changes.
 */
import type { Collection, Db } from 'mongodb';
import { SyncmeshError } from '../errors.js';
import { haversineKm } from './geo.js';

export interface MeshNode {
  id: string;
  address: string;
  lat: number;
  lon: number;
  /** km from the own node; null while no own node is known. 0 for the own node. */
  distance: number | null;
  own_node: boolean;
  subscribed: boolean;
}

export type NodeInput = Omit<MeshNode, 'distance'>;
export type NodePatch = Partial<Omit<MeshNode, 'id' | 'distance'>>;

interface StoredNode extends MeshNode {
  _id: string;
}

const strip = ({ _id, ...node }: StoredNode): MeshNode => node;

export class NodeRegistry {
  private readonly nodes: Collection<StoredNode>;
  /** Serialises mutations so that "exactly one own node" and the stored distances stay consistent. */
  private chain: Promise<unknown> = Promise.resolve();
  private mutations = 0;

  constructor(metaDb: Db) {
    this.nodes = metaDb.collection<StoredNode>('nodes');
  }

  /** Mutations made through this object so far: a caller that caches what it read compares it. */
  get changes(): number {
    return this.mutations;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn).finally(() => {
      this.mutations++;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  async list(filter: { own_node?: boolean; subscribed?: boolean } = {}): Promise<MeshNode[]> {
    const q: Record<string, boolean> = {};
    if (filter.own_node !== undefined) q['own_node'] = filter.own_node;
    if (filter.subscribed !== undefined) q['subscribed'] = filter.subscribed;
    const docs = await this.nodes.find(q).toArray();
    return docs.map(strip).sort(byDistanceThenId);
  }

  async get(id: string): Promise<MeshNode | null> {
    const doc = await this.nodes.findOne({ _id: id });
    return doc ? strip(doc) : null;
  }

  async own(): Promise<MeshNode | null> {
    const doc = await this.nodes.findOne({ own_node: true });
    return doc ? strip(doc) : null;
  }

  add(input: NodeInput): Promise<MeshNode> {
    return this.serial(async () => {
      if (await this.nodes.findOne({ _id: input.id })) {
        throw new SyncmeshError('EDGE_SYNCMESH_NODE_EXISTS', `node '${input.id}' is already registered; use updateNode to change it`);
      }
      if (input.own_node) await this.clearOwnExcept(input.id);
      const own = input.own_node ? input : await this.own();
      const node: StoredNode = { _id: input.id, ...input, distance: distanceFrom(own, input) };
      await this.nodes.insertOne(node);
      if (input.own_node) await this.recomputeDistances(input);
      return strip(node);
    });
  }

  update(id: string, patch: NodePatch): Promise<MeshNode> {
    return this.serial(async () => {
      const current = await this.nodes.findOne({ _id: id });
      if (!current) throw new SyncmeshError('EDGE_SYNCMESH_NODE_NOT_FOUND', `no node '${id}' in the registry`);
      const next: StoredNode = { ...current, ...definedOnly(patch) };
      if (next.own_node && !current.own_node) await this.clearOwnExcept(id);
      const moved = next.lat !== current.lat || next.lon !== current.lon;
      const own = next.own_node ? next : await this.own();
      next.distance = distanceFrom(own, next);
      await this.nodes.replaceOne({ _id: id }, next);
      if (next.own_node && (moved || !current.own_node)) await this.recomputeDistances(next);
      if (!next.own_node && current.own_node) await this.recomputeDistances(null);
      return strip(next);
    });
  }

  delete(id: string): Promise<boolean> {
    return this.serial(async () => {
      const current = await this.nodes.findOne({ _id: id });
      if (!current) return false;
      await this.nodes.deleteOne({ _id: id });
      if (current.own_node) await this.recomputeDistances(null);
      return true;
    });
  }

  private async clearOwnExcept(id: string): Promise<void> {
    await this.nodes.updateMany({ own_node: true, _id: { $ne: id } }, { $set: { own_node: false } });
  }

  /** Stores every node's distance from `own` (null when there is no own node). */
  private async recomputeDistances(own: Pick<MeshNode, 'id' | 'lat' | 'lon'> | null): Promise<void> {
    const all = await this.nodes.find({}).toArray();
    for (const n of all) {
      const distance = distanceFrom(own, n);
      if (distance !== n.distance) await this.nodes.updateOne({ _id: n._id }, { $set: { distance } });
    }
  }
}

function distanceFrom(own: Pick<MeshNode, 'id' | 'lat' | 'lon'> | null, node: Pick<MeshNode, 'id' | 'lat' | 'lon'>): number | null {
  if (!own) return null;
  if (own.id === node.id) return 0;
  return haversineKm(own, node);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}

export function byDistanceThenId(a: MeshNode, b: MeshNode): number {
  const da = a.distance ?? Number.POSITIVE_INFINITY;
  const db = b.distance ?? Number.POSITIVE_INFINITY;
  if (da !== db) return da - db;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
