/**
 * The sensor stores of one node: one per allowed database.collection (kept), and the stores of
 * the replicas it holds for other nodes (cheap views, made per request).
 */
import type { MongoClient } from 'mongodb';
import type { Config } from '../config.js';
import { REPLICA_SUFFIX } from '../replication/replicas.js';
import { SensorStore } from './sensors.js';

export class SensorStores {
  private readonly stores = new Map<string, SensorStore>();

  constructor(
    private readonly client: MongoClient,
    private readonly config: Config,
  ) {}

  own(database: string, collection: string): SensorStore {
    const key = `${database}.${collection}`;
    let store = this.stores.get(key);
    if (!store) {
      store = new SensorStore(this.client.db(database), collection, undefined, this.config.requestDeadlineMs);
      this.stores.set(key, store);
    }
    return store;
  }

  /** The replicas this node holds for `origin` in database.collection. */
  replicasOf(database: string, collection: string, origin: string): SensorStore {
    return new SensorStore(this.client.db(database), `${collection}${REPLICA_SUFFIX}`, origin, this.config.requestDeadlineMs);
  }

  /** Indexes on timestamp and (sensor_id, timestamp) in every allowed collection. */
  async ensureIndexes(): Promise<void> {
    for (const db of this.config.databases) {
      for (const coll of this.config.collections) await this.own(db, coll).ensureIndexes();
    }
  }
}
