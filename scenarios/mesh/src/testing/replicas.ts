/** Shared by the mesh integration tests and benchmarks: readings to replicate, and does a subscriber's replica collection equal its origin's readings, document for document? */
import { ObjectId, type Document } from 'mongodb';
import { replicaId } from '@syncmesh-edge/syncmesh-fn/replica-id';
import { canonicalFields } from '../chaos/chaos.js';

/**
 * Reading `i` of a sensor that no data set has (9000), one second apart in August 2017: outside
 * every July window the tests and benchmarks query.
 */
export function augustReading(i: number, sensorId = 9000): Document & { _id: ObjectId } {
  return {
    _id: new ObjectId(),
    sensor_id: sensorId,
    location: 9000,
    lat: 42.7,
    lon: 23.3,
    timestamp: new Date(Date.UTC(2017, 7, 1) + i * 1000),
    temperature: 20,
    humidity: 50,
    pressure: 94000,
  };
}

export interface ReplicaDiff {
  /** The origin's readings compared. */
  readings: number;
  /** Replica documents compared. */
  replicas: number;
  /** What differs, one line per reading (at most `limit`); empty when the replicas equal the readings. */
  problems: string[];
}

/**
 * Compares an origin's readings with a subscriber's replicas of them: each reading must have
 * exactly one replica (keyed `<origin>|<_id>`, functions/syncmesh/src/replication/ops.ts) with
 * the same `_origin_id` and the same fields (every field, so a replace that dropped one must
 * have dropped it there too), and no replica may be left of a reading the origin no longer holds.
 */
export function replicaDiff(origin: string, readings: readonly Document[], replicas: readonly Document[], limit = 10): ReplicaDiff {
  const problems: string[] = [];
  const want = new Map<string, Document>();
  for (const r of readings) want.set(replicaId(origin, r['_id']), r);
  const seen = new Set<string>();
  for (const rep of replicas) {
    const id = String(rep['_id']);
    const reading = want.get(id);
    if (seen.has(id)) problems.push(`${id}: held twice`);
    seen.add(id);
    if (!reading) problems.push(`${id}: a replica of a reading ${origin} does not hold`);
    else if (replicaId(origin, rep['_origin_id']) !== id) problems.push(`${id}: _origin_id ${String(rep['_origin_id'])}`);
    else if (canonicalFields(rep) !== canonicalFields(reading)) problems.push(`${id}: replica ${canonicalFields(rep)} != reading ${canonicalFields(reading)}`);
  }
  for (const id of want.keys()) if (!seen.has(id)) problems.push(`${id}: no replica`);
  return {
    readings: readings.length,
    replicas: replicas.length,
    problems: problems.slice(0, limit).concat(problems.length > limit ? [`… ${problems.length - limit} more`] : []),
  };
}
