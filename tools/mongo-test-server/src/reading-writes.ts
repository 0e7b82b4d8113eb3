/**
 * Every kind of write a driver makes, on sensor readings of one sensor, in a collection that
 * holds other readings too (a node's `syncmesh.sensor_data`): for tests that check what the
 * writes of today's drivers become downstream (replicas, aggregates). The Node driver's run is
 * `nodeReadingWrites`; `pymongoReadingWrites` runs the same writes with the newest pymongo
 * (`test/pymongo_scenario.py readings`, its twin: keep the two in step).
 *
 * The writes, on readings a minute apart from `start` (reading i at start + i min):
 * insert one (0) and many (1-40); update one with `$set` + `$inc` (0) and with `$unset` (1);
 * update many with `$inc` + `$set` (2-9); replace one (10, dropping a field); upsert by
 * {sensor_id, timestamp} with operators (100: inserted, then updated) and with a replacement
 * (101: inserted, then replaced); find-and-update (20), find-and-replace (21), find-and-delete
 * (22); one ordered bulk write of two inserts (60, 61), an update one (23), an update many
 * (30-34), a replace (24), an upsert by replacement (102) and by operators (103), a delete one
 * (25) and a delete many (36-38); delete one (26), delete many (27-29); an unacknowledged
 * insert (`w: 0`, 62). 17 driver calls; they leave `READINGS_LEFT` readings of the sensor and
 * make `READING_WRITE_EVENTS` change events (one per document written).
 */
import { resolve } from 'node:path';
import type { Collection, Document, ObjectId } from 'mongodb';
import { packageRoot, runPython, type Pymongo } from './pymongo.js';

/** Readings of the sensor the writes leave: 41 inserted, 6 upserted or bulk-inserted, 9 deleted, 1 unacknowledged insert. */
export const READINGS_LEFT = 39;

/**
 * The change events the writes make, as MongoDB reports them: one per document inserted (41 +
 * 2 + the w: 0 insert), upserted (4, as inserts), updated (1 + 1 + 8 + 1 + 1 + 1 + 5),
 * replaced (1 + 1 + 1 + 1) or deleted (1 + 1 + 3 + 1 + 3); every update changes something.
 */
export const READING_WRITE_EVENTS = 79;

/** The Python twin. */
export const PYMONGO_SCENARIO = resolve(packageRoot, 'test', 'pymongo_scenario.py');

export interface ReadingWrites {
  /** e.g. "pymongo 4.20.1", "Node driver 7.9.0". */
  driver: string;
  /** Driver calls made. */
  calls: number;
  /** Readings of the sensor in the collection afterwards. */
  count: number;
  /** When the last write call returned (epoch ms). */
  last_write_ms: number;
}

export interface ReadingWritesOptions {
  sensorId: number;
  /** The first reading's timestamp. */
  start: Date;
}

const MINUTE = 60_000;

function reading(sensor: number, start: Date, i: number, changes: Record<string, unknown> = {}): Document {
  const doc: Document = {
    sensor_id: sensor,
    location: sensor,
    lat: 42.7,
    lon: 23.3,
    timestamp: new Date(start.getTime() + i * MINUTE),
    temperature: 20 + (i % 10) * 0.5,
    humidity: 50 + (i % 7),
    pressure: 94000 + i,
    ...changes,
  };
  for (const [k, v] of Object.entries(doc)) if (v === null) delete doc[k];
  return doc;
}

/**
 * The writes with the Node driver, on `coll` (a collection of the caller's client). `driver`
 * names the driver in the result (the caller knows its version).
 */
export async function nodeReadingWrites(coll: Collection<Document>, opts: ReadingWritesOptions, driver: string): Promise<ReadingWrites> {
  const { sensorId: sensor, start } = opts;
  const minute = (i: number) => new Date(start.getTime() + i * MINUTE);
  const at = (i: number) => ({ sensor_id: sensor, timestamp: minute(i) });
  const between = (a: number, b: number) => ({ sensor_id: sensor, timestamp: { $gte: minute(a), $lte: minute(b) } });
  const ids: ObjectId[] = [(await coll.insertOne(reading(sensor, start, 0))).insertedId];
  const many = await coll.insertMany(Array.from({ length: 40 }, (_, k) => reading(sensor, start, k + 1)));
  for (let k = 0; k < 40; k++) ids.push(many.insertedIds[k]!);
  await coll.updateOne({ _id: ids[0] }, { $set: { temperature: 31.5 }, $inc: { pressure: 12.5 } });
  await coll.updateOne({ _id: ids[1] }, { $unset: { humidity: '' } });
  await coll.updateMany(between(2, 9), { $inc: { temperature: 1 }, $set: { checked: true } });
  await coll.replaceOne({ _id: ids[10] }, reading(sensor, start, 10, { temperature: 5.5, humidity: null, note: 'replaced' }));
  await coll.updateOne(at(100), { $set: { location: sensor, temperature: 12, humidity: 61 } }, { upsert: true });
  await coll.updateOne(at(100), { $inc: { temperature: 0.25 } }, { upsert: true });
  await coll.replaceOne(at(101), reading(sensor, start, 101), { upsert: true });
  await coll.replaceOne(at(101), reading(sensor, start, 101, { temperature: 9 }), { upsert: true });
  await coll.findOneAndUpdate({ _id: ids[20] }, { $set: { temperature: 40 } });
  await coll.findOneAndReplace({ _id: ids[21] }, reading(sensor, start, 21, { pressure: 90000 }));
  await coll.findOneAndDelete({ _id: ids[22] });
  await coll.bulkWrite([
    { insertOne: { document: reading(sensor, start, 60) } },
    { insertOne: { document: reading(sensor, start, 61) } },
    { updateOne: { filter: { _id: ids[23] }, update: { $inc: { humidity: -1 } } } },
    { updateMany: { filter: between(30, 34), update: { $set: { batch: 2 } } } },
    { replaceOne: { filter: { _id: ids[24] }, replacement: reading(sensor, start, 24, { note: 'replaced in bulk' }) } },
    { replaceOne: { filter: at(102), replacement: reading(sensor, start, 102), upsert: true } },
    { updateOne: { filter: at(103), update: { $set: { temperature: 1 } }, upsert: true } },
    { deleteOne: { filter: { _id: ids[25] } } },
    { deleteMany: { filter: between(36, 38) } },
  ]);
  await coll.deleteOne({ _id: ids[26] });
  await coll.deleteMany(between(27, 29));
  await coll.insertOne(reading(sensor, start, 62), { writeConcern: { w: 0 } }); // unacknowledged
  const lastWriteMs = Date.now();
  const deadline = Date.now() + 30_000;
  while ((await coll.countDocuments(at(62))) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return { driver, calls: 17, count: await coll.countDocuments({ sensor_id: sensor }), last_write_ms: lastWriteMs };
}

/** The same writes with the newest pymongo (`ensurePymongo()`), on `uri`'s database.collection. */
export async function pymongoReadingWrites(py: Pymongo, uri: string, db: string, coll: string, opts: ReadingWritesOptions): Promise<ReadingWrites> {
  const out = await runPython(py, [PYMONGO_SCENARIO, 'readings', uri, db, coll, String(opts.sensorId), opts.start.toISOString()]);
  return JSON.parse(out) as ReadingWrites;
}
