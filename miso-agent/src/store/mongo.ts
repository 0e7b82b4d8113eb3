/**
 * Persistence in the node's MongoDB (database `miso` by default), write-behind:
 * changed keys are collected and written in one bulk upsert `delayMs` after the first change
 * not yet written, or when the write in flight ends if that is later (0 = the caller awaits the
 * write before answering). On start the agent loads every entry. The node identity (node id and an incarnation counter) lives in `meta`.
 *
 * Collections:
 *   crdts: { _id: "<fn>\0<object>\0<name>", fn, object, name, type, gen, state: BinData }
 *   meta:  { _id: "node", nodeId, incarnation }
 */
import { randomNodeId } from './types.js';
import { Binary, MongoClient, type AnyBulkWriteOperation, type Collection, type Db } from 'mongodb';
import { MisoError } from '../errors.js';
import type { Logger } from '@syncmesh-edge/log';

/** Server selection / connect deadline. */
const CONNECT_TIMEOUT_MS = 10_000;
/** Upper bound of one bulk write, so a stuck database cannot pile up memory forever. */
const WRITE_BATCH_MAX = 1_000;
/** Retry delay after a failed flush. */
const RETRY_DELAY_MS = 500;

interface CrdtDoc {
  _id: string;
  fn: string;
  object: string;
  name: string;
  type: string;
  gen: number;
  state: Binary;
}
interface MetaDoc {
  _id: string;
  nodeId: string;
  incarnation: number;
}

import type { NodeIdentity, PersistedEntry, SnapshotFn, StateStore } from './types.js';

export class MongoStateStore implements StateStore {
  private readonly client: MongoClient;
  private readonly db: Db;
  private readonly crdts: Collection<CrdtDoc>;
  private readonly meta: Collection<MetaDoc>;
  private readonly dirty = new Map<string, [string, string, string]>();
  private timer: NodeJS.Timeout | undefined;
  /** When the oldest change not yet written was made (ms since the epoch). */
  private firstDirtyAt = 0;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(
    uri: string,
    dbName: string,
    private readonly delayMs: number,
    private readonly snapshot: SnapshotFn,
    private readonly log: Logger,
  ) {
    this.client = new MongoClient(uri, {
      serverSelectionTimeoutMS: CONNECT_TIMEOUT_MS,
      connectTimeoutMS: CONNECT_TIMEOUT_MS,
      maxPoolSize: 4,
    });
    this.db = this.client.db(dbName);
    this.crdts = this.db.collection<CrdtDoc>('crdts');
    this.meta = this.db.collection<MetaDoc>('meta');
  }

  get pending(): number {
    return this.dirty.size;
  }

  async identity(wanted: string | undefined): Promise<NodeIdentity> {
    try {
      await this.client.connect();
      const cur = await this.meta.findOne({ _id: 'node' });
      const nodeId = wanted ?? cur?.nodeId ?? randomNodeId();
      const incarnation = (cur?.incarnation ?? 0) + 1;
      await this.meta.replaceOne({ _id: 'node' }, { nodeId, incarnation }, { upsert: true });
      return { nodeId, incarnation };
    } catch (err) {
      throw new MisoError('EDGE_MISO_STORE', `cannot read the node identity from MongoDB (${this.db.databaseName}.meta): ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  async *load(): AsyncIterable<PersistedEntry> {
    for await (const d of this.crdts.find({})) {
      yield { fn: d.fn, object: d.object, name: d.name, type: d.type, gen: d.gen, state: d.state.buffer };
    }
  }

  changed(fn: string, object: string, name: string): Promise<void> | undefined {
    if (this.closed) return undefined;
    if (this.dirty.size === 0) this.firstDirtyAt = Date.now();
    this.dirty.set(`${fn}\u0000${object}\u0000${name}`, [fn, object, name]);
    if (this.delayMs === 0) return this.flush();
    this.schedule();
    return undefined;
  }

  /**
   * Write-behind: one write of everything dirty, `delayMs` after the oldest unwritten change.
   * Keys changed while a write is in flight wait for the next timer, not for the end of that
   * write: a hot key under load is written about once per `delayMs`, not back to back (which
   * cost more CPU in the driver and the database than the operations themselves).
   */
  private schedule(): void {
    if (this.timer || this.flushing || this.closed || this.dirty.size === 0) return;
    const wait = Math.max(0, this.firstDirtyAt + this.delayMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.write(false).catch((err: unknown) => this.log.error({ err }, 'persisting CRDTs failed; retrying'));
    }, wait);
  }

  /** Writes every dirty key, also those changed during the write; concurrent callers share one write. */
  flush(): Promise<void> {
    return this.write(true);
  }

  private async write(untilClean: boolean): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.dirty.size === 0) return;
    this.flushing = this.writeDirty(untilClean).finally(() => {
      this.flushing = undefined;
      if (this.delayMs > 0) this.schedule();
    });
    return this.flushing;
  }

  private async writeDirty(untilClean: boolean): Promise<void> {
    // Without untilClean, only the keys dirty now (changes during the write wait for the timer).
    let left = untilClean ? Number.POSITIVE_INFINITY : this.dirty.size;
    while (this.dirty.size > 0 && left > 0) {
      const batch: [string, [string, string, string]][] = [];
      for (const kv of this.dirty) {
        batch.push(kv);
        if (batch.length >= WRITE_BATCH_MAX || batch.length >= left) break;
      }
      left -= batch.length;
      for (const [k] of batch) this.dirty.delete(k);
      const ops: AnyBulkWriteOperation<CrdtDoc>[] = [];
      for (const [id, [fn, object, name]] of batch) {
        const w = this.snapshot(fn, object, name);
        if (!w) {
          ops.push({ deleteOne: { filter: { _id: id } } });
          continue;
        }
        const doc: CrdtDoc = { _id: id, fn, object, name, type: w.type, gen: w.gen, state: new Binary(Buffer.from(w.state)) };
        ops.push({ replaceOne: { filter: { _id: id }, replacement: doc, upsert: true } });
      }
      try {
        await this.crdts.bulkWrite(ops, { ordered: false });
      } catch (err) {
        // Put the keys back (unless changed again meanwhile) and retry later.
        for (const [k, v] of batch) if (!this.dirty.has(k)) this.dirty.set(k, v);
        if (!this.closed && !this.timer) {
          this.timer = setTimeout(
            () => {
              this.timer = undefined;
              this.write(false).catch((e: unknown) => this.log.error({ err: e }, 'persisting CRDTs failed; retrying'));
            },
            Math.max(RETRY_DELAY_MS, this.delayMs),
          );
        }
        throw new MisoError('EDGE_MISO_STORE', `writing ${ops.length} CRDTs to MongoDB failed: ${(err as Error).message}`, { cause: err });
      }
    }
  }

  /** Flushes what is pending and disconnects. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    try {
      await this.flush();
    } finally {
      this.closed = true;
      await this.client.close();
    }
  }
}
