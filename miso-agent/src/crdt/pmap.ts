/**
 * A persistent (immutable, structure-sharing) map from strings to values, so
 * that joining a small delta into a large orset/ormap state does not copy the
 * whole store. It is a fixed two-level trie over a 32-bit FNV-1a hash of the
 * key: 64 x 64 branches, each leaf a small native Map. An update copies two
 * 64-slot arrays and one leaf; everything else is shared with the old map.
 * Iteration order follows the hash, not insertion: callers that need an
 * order (encode, value) sort.
 */

type Leaf<V> = Map<string, V>;
type Mid<V> = (Leaf<V> | undefined)[];
type Top<V> = (Mid<V> | undefined)[];

const WIDTH = 64;

function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class PMap<V> {
  private static readonly EMPTY = new PMap<never>(new Array<undefined>(WIDTH).fill(undefined), 0);

  private constructor(
    private readonly top: Top<V>,
    readonly size: number,
  ) {}

  static empty<V>(): PMap<V> {
    return PMap.EMPTY as unknown as PMap<V>;
  }

  static from<V>(entries: Iterable<readonly [string, V]>): PMap<V> {
    const b = PMap.empty<V>().edit();
    for (const [k, v] of entries) b.set(k, v);
    return b.done();
  }

  private leaf(key: string): Leaf<V> | undefined {
    const h = hash(key);
    return this.top[h >>> 26]?.[(h >>> 20) & 63];
  }

  get(key: string): V | undefined {
    return this.leaf(key)?.get(key);
  }

  has(key: string): boolean {
    return this.leaf(key)?.has(key) ?? false;
  }

  set(key: string, value: V): PMap<V> {
    return this.edit().set(key, value).done();
  }

  delete(key: string): PMap<V> {
    return this.edit().delete(key).done();
  }

  /** A transient editor: copies each touched branch once, then `done()` freezes the result. */
  edit(): PMapEditor<V> {
    return new PMapEditor(this.top, this.size, (top, size) => (top === this.top ? this : new PMap(top, size)));
  }

  *entries(): IterableIterator<[string, V]> {
    for (const mid of this.top) {
      if (mid === undefined) continue;
      for (const leaf of mid) if (leaf !== undefined) yield* leaf.entries();
    }
  }

  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): IterableIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }
}

export class PMapEditor<V> {
  private top: Top<V>;
  private topOwned = false;
  private closed = false;
  private readonly owned = new Set<object>();

  constructor(
    private readonly origTop: Top<V>,
    private size: number,
    private readonly finish: (top: Top<V>, size: number) => PMap<V>,
  ) {
    this.top = origTop;
  }

  /** The leaf for `key`, copied (with its path) on first write in this session. */
  private writableLeaf(key: string): Leaf<V> {
    if (this.closed) throw new Error('PMapEditor used after done()');
    const h = hash(key);
    const i = h >>> 26;
    const j = (h >>> 20) & 63;
    if (!this.topOwned) {
      this.top = this.top.slice();
      this.topOwned = true;
    }
    let mid = this.top[i];
    if (mid === undefined) {
      mid = new Array<Leaf<V> | undefined>(WIDTH).fill(undefined);
      this.owned.add(mid);
      this.top[i] = mid;
    } else if (!this.owned.has(mid)) {
      mid = mid.slice();
      this.owned.add(mid);
      this.top[i] = mid;
    }
    let leaf = mid[j];
    if (leaf === undefined) {
      leaf = new Map();
      this.owned.add(leaf);
      mid[j] = leaf;
    } else if (!this.owned.has(leaf)) {
      leaf = new Map(leaf);
      this.owned.add(leaf);
      mid[j] = leaf;
    }
    return leaf;
  }

  private peek(key: string): Leaf<V> | undefined {
    const h = hash(key);
    return this.top[h >>> 26]?.[(h >>> 20) & 63];
  }

  get(key: string): V | undefined {
    return this.peek(key)?.get(key);
  }

  set(key: string, value: V): this {
    const cur = this.peek(key);
    if (cur?.has(key) && cur.get(key) === value) return this;
    const leaf = this.writableLeaf(key);
    if (!leaf.has(key)) this.size++;
    leaf.set(key, value);
    return this;
  }

  delete(key: string): this {
    if (!(this.peek(key)?.has(key) ?? false)) return this;
    this.writableLeaf(key).delete(key);
    this.size--;
    return this;
  }

  done(): PMap<V> {
    this.closed = true;
    return this.finish(this.topOwned ? this.top : this.origTop, this.size);
  }
}
