/**
 * Today's drivers against the node's database: the newest pymongo (installed into a venv under
 * .cache/ by src/pymongo.ts) and the project's Node driver each make every kind of write a driver
 * can make, read back, and watch a change stream that must show each write as MongoDB shows it.
 * Both run the same scenario (test/pymongo_scenario.py is its Python twin) against the test
 * server, or against MONGODB_URI (a real MongoDB) when it is set.
 */
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BSON, type ChangeStream, MongoClient, type Document, ObjectId } from 'mongodb';
import {
  ensurePymongo,
  nodeReadingWrites,
  PYMONGO_SCENARIO,
  pymongoReadingWrites,
  READING_WRITE_EVENTS,
  READINGS_LEFT,
  resolveMongo,
  runPython,
  type MongoTarget,
} from '../src/index.js';

const NODE_DRIVER_VERSION = (createRequire(import.meta.url)('mongodb/package.json') as { version: string }).version;
const DB = 'drivers';

let mongo: MongoTarget;
before(async () => {
  mongo = await resolveMongo();
});
after(async () => {
  await mongo?.stop();
});

/** What a driver's run of the scenario returns (pymongo prints it as relaxed Extended JSON). */
interface ScenarioResult {
  driver: string;
  generated: unknown;
  events: Document[];
  reads: { find: Document[]; count: number; countN: number; distinct: number[]; group: Document[]; sorted: unknown[]; index: string };
  resumed: { startAfter3?: Document | null; resumeAfter10?: Document | null };
}

interface Expected {
  op: 'insert' | 'update' | 'replace' | 'delete';
  id: string | 'generated';
  fullDocument?: Document | null;
  updatedFields?: Document;
  removedFields?: string[];
  truncatedArrays?: Document[];
}

/** The final state; update events carry it (updateLookup reads the document when the event is read). */
const A = { _id: 'a', n: 10, tags: ['x'], k: 1 };
const B = { _id: 'b', r: 1 };
const upd = (id: string, updatedFields: Document, fullDocument: Document | null, removedFields: string[] = [], truncatedArrays: Document[] = []): Expected => ({
  op: 'update',
  id,
  updatedFields,
  removedFields,
  truncatedArrays,
  fullDocument,
});

/** The events of the scenario's writes, in order, as MongoDB 7.0 produces them. */
const EXPECTED: Expected[] = [
  { op: 'insert', id: 'a', fullDocument: { _id: 'a', n: 1, tags: ['x'], sub: { p: 1 } } },
  { op: 'insert', id: 'generated' },
  { op: 'insert', id: 'b', fullDocument: { _id: 'b', n: 2 } },
  { op: 'insert', id: 'c', fullDocument: { _id: 'c', n: 3 } },
  upd('a', { n: 10, 'sub.q': 2, k: 1, 'tags.1': 'y' }, A), // $set, $inc, $push
  upd('a', {}, A, ['sub'], [{ field: 'tags', newSize: 1 }]), // $unset, $pop
  upd('b', { m: true }, B), // update_many
  upd('c', { m: true }, null), // c is deleted by the time the event is read
  { op: 'replace', id: 'b', fullDocument: B },
  { op: 'insert', id: 'u', fullDocument: { _id: 'u', v: 1 } }, // upsert with operators
  { op: 'insert', id: 'v', fullDocument: { _id: 'v', w: 1 } }, // upsert with a replacement
  upd('c', { n: 8 }, null), // findOneAndUpdate
  { op: 'insert', id: 'd', fullDocument: { _id: 'd', n: 4 } }, // bulk write
  upd('d', { n: 5 }, null),
  { op: 'replace', id: 'd', fullDocument: { _id: 'd', n: 6 } },
  { op: 'delete', id: 'd' },
  { op: 'delete', id: 'c' },
  { op: 'delete', id: 'u' },
  { op: 'delete', id: 'v' },
  { op: 'insert', id: 'w0', fullDocument: { _id: 'w0' } }, // unacknowledged (w: 0)
];

function checkScenario(r: ScenarioResult): void {
  const generated = r.generated as ObjectId;
  assert.ok(generated instanceof ObjectId, `${r.driver}: the generated _id is an ObjectId`);
  assert.equal(r.events.length, EXPECTED.length, `${r.driver}: ${r.events.length} events: ${r.events.map((e) => e['operationType']).join(' ')}`);
  const tokens = new Set<string>();
  EXPECTED.forEach((want, i) => {
    const e = r.events[i]!;
    const where = `${r.driver}, event ${i} (${want.op} ${want.id})`;
    const id = want.id === 'generated' ? generated : want.id;
    assert.equal(e['operationType'], want.op, where);
    assert.deepEqual(e['documentKey'], { _id: id }, `${where}: documentKey`);
    assert.deepEqual(e['ns'], { db: DB, coll: r.events[0]!['ns'].coll }, `${where}: ns`);
    assert.ok(e['clusterTime'] instanceof BSON.Timestamp, `${where}: clusterTime`);
    const token = (e['_id'] as { _data?: unknown })._data;
    assert.equal(typeof token, 'string', `${where}: resume token`);
    tokens.add(token as string);
    if (want.op === 'update') {
      assert.deepEqual(
        e['updateDescription'],
        { updatedFields: want.updatedFields, removedFields: want.removedFields, truncatedArrays: want.truncatedArrays },
        `${where}: updateDescription`,
      );
    } else {
      assert.equal(e['updateDescription'], undefined, `${where}: no updateDescription`);
    }
    if (want.op === 'delete') assert.equal(e['fullDocument'], undefined, `${where}: no fullDocument`);
    else if (want.id === 'generated') assert.deepEqual(e['fullDocument'], { _id: generated, n: 0 }, `${where}: fullDocument`);
    else assert.deepEqual(e['fullDocument'], want.fullDocument, `${where}: fullDocument`);
  });
  assert.equal(tokens.size, EXPECTED.length, `${r.driver}: every event has its own resume token`);

  assert.deepEqual(r.reads.find, [{ _id: 'a', n: 10 }, { _id: 'b' }], `${r.driver}: find with sort, limit and projection`);
  assert.equal(r.reads.count, 4, `${r.driver}: countDocuments`);
  assert.equal(r.reads.countN, 2, `${r.driver}: countDocuments with a filter`);
  assert.deepEqual(r.reads.distinct, [0, 10], `${r.driver}: distinct`);
  assert.deepEqual(r.reads.group, [{ total: 10, count: 2 }], `${r.driver}: aggregate $match $group $project`);
  assert.deepEqual(r.reads.sorted, [generated, 'w0', 'b', 'a'], `${r.driver}: aggregate $sort (ObjectId after strings)`);
  assert.equal(r.reads.index, 'n_1', `${r.driver}: createIndex`);

  const next = (i: number) => ({ op: r.events[i]!['operationType'], key: r.events[i]!['documentKey'], token: r.events[i]!['_id'] });
  const got = (e: Document | null | undefined) => e && { op: e['operationType'], key: e['documentKey'], token: e['_id'] };
  assert.deepEqual(got(r.resumed.startAfter3), next(4), `${r.driver}: startAfter the 4th event returns the 5th`);
  assert.deepEqual(got(r.resumed.resumeAfter10), next(11), `${r.driver}: resumeAfter the 11th event returns the 12th`);
}

async function nextEvent(stream: ChangeStream, deadline: number): Promise<Document | null> {
  while (Date.now() < deadline) {
    const e = await stream.tryNext();
    if (e) return e as Document;
  }
  return null;
}

/** The scenario's documents: string _ids, but one generated ObjectId. */
interface Doc {
  _id: string | ObjectId;
  n?: number;
  tags?: string[];
  sub?: { p?: number; q?: number };
  k?: number;
  m?: boolean;
  r?: number;
  v?: number;
  w?: number;
}

/** The scenario of pymongo_scenario.py, with the Node driver. */
async function nodeScenario(uri: string, collName: string): Promise<ScenarioResult> {
  const client = await MongoClient.connect(uri);
  try {
    const coll = client.db(DB).collection<Doc>(collName);
    await coll.drop().catch(() => false); // absent: nothing to drop
    const stream = coll.watch([], { fullDocument: 'updateLookup' });
    assert.equal(await stream.tryNext(), null); // open before the first write
    await coll.insertOne({ _id: 'a', n: 1, tags: ['x'], sub: { p: 1 } });
    const generated = (await client.db(DB).collection(collName).insertOne({ n: 0 })).insertedId;
    await coll.insertMany([
      { _id: 'b', n: 2 },
      { _id: 'c', n: 3 },
    ]);
    await coll.updateOne({ _id: 'a' }, { $set: { n: 10, 'sub.q': 2 }, $inc: { k: 1 }, $push: { tags: 'y' } });
    await coll.updateOne({ _id: 'a' }, { $unset: { sub: '' }, $pop: { tags: 1 } });
    await coll.updateMany({ _id: { $in: ['b', 'c'] } }, { $set: { m: true } });
    await coll.replaceOne({ _id: 'b' }, { r: 1 });
    await coll.updateOne({ _id: 'u' }, { $set: { v: 1 } }, { upsert: true });
    await coll.replaceOne({ _id: 'v' }, { w: 1 }, { upsert: true });
    await coll.findOneAndUpdate({ _id: 'c' }, { $inc: { n: 5 } });
    await coll.bulkWrite([
      { insertOne: { document: { _id: 'd', n: 4 } } },
      { updateOne: { filter: { _id: 'd' }, update: { $set: { n: 5 } } } },
      { replaceOne: { filter: { _id: 'd' }, replacement: { n: 6 } } },
      { deleteOne: { filter: { _id: 'd' } } },
    ]);
    await coll.deleteOne({ _id: 'c' });
    await coll.deleteMany({ _id: { $in: ['u', 'v'] } });
    await client
      .db(DB)
      .collection<Doc>(collName, { writeConcern: { w: 0 } })
      .insertOne({ _id: 'w0' });

    const deadline = Date.now() + 30_000;
    while ((await coll.countDocuments({ _id: 'w0' })) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const events: Document[] = [];
    while (events.length < EXPECTED.length && Date.now() < deadline) {
      const e = await stream.tryNext();
      if (e) events.push(e as Document);
    }
    await stream.close();

    const reads = {
      find: await coll
        .find({}, { projection: { n: 1 } })
        .sort({ _id: 1 })
        .limit(2)
        .toArray(),
      count: await coll.countDocuments({}),
      countN: await coll.countDocuments({ n: { $gte: 0 } }),
      distinct: ((await coll.distinct('n')) as number[]).sort((x, y) => x - y),
      group: await coll
        .aggregate([
          { $match: { n: { $exists: true } } },
          { $group: { _id: null, total: { $sum: '$n' }, count: { $sum: 1 } } },
          { $project: { _id: 0, total: 1, count: 1 } },
        ])
        .toArray(),
      sorted: (await coll.aggregate([{ $match: {} }, { $sort: { _id: -1 } }, { $project: { _id: 1 } }]).toArray()).map((d) => d['_id']),
      index: await coll.createIndex({ n: 1 }),
    };

    const resumed: ScenarioResult['resumed'] = {};
    if (events.length > 11) {
      const afterStart = coll.watch([], { startAfter: events[3]!['_id'], fullDocument: 'updateLookup' });
      resumed.startAfter3 = await nextEvent(afterStart, deadline);
      await afterStart.close();
      const afterResume = coll.watch([], { resumeAfter: events[10]!['_id'] });
      resumed.resumeAfter10 = await nextEvent(afterResume, deadline);
      await afterResume.close();
    }
    return { driver: `Node driver ${NODE_DRIVER_VERSION}`, generated, events, reads, resumed };
  } finally {
    await client.close();
  }
}

test('drivers - the Node driver makes every kind of write and its change stream shows each one as MongoDB does', async (t) => {
  const r = await nodeScenario(mongo.uri, 'node');
  t.diagnostic(`${r.driver} against ${mongo.kind === 'real' ? 'MONGODB_URI' : 'the test server'}`);
  checkScenario(r);
});

test('drivers - the newest pymongo makes every kind of write and its change stream shows each one as MongoDB does', async (t) => {
  const py = await ensurePymongo();
  const out = await runPython(py, [PYMONGO_SCENARIO, mongo.uri, DB, 'pymongo']);
  const r = BSON.EJSON.parse(out, { relaxed: true }) as unknown as ScenarioResult;
  t.diagnostic(`${r.driver} (venv ${join('.cache', 'pymongo-venv')}) against ${mongo.kind === 'real' ? 'MONGODB_URI' : 'the test server'}`);
  checkScenario(r);
});

test('drivers - the reading writes (src/reading-writes.ts): the newest pymongo and the Node driver leave the same readings', async (t) => {
  const py = await ensurePymongo();
  const client = await MongoClient.connect(mongo.uri);
  try {
    const coll = client.db(DB).collection('readings');
    await coll.drop().catch(() => false); // absent: nothing to drop
    await coll.insertOne({ sensor_id: 1, timestamp: new Date(Date.UTC(2017, 8, 1)), temperature: 1 }); // another sensor's reading stays
    const starts = { py: new Date(Date.UTC(2017, 8, 1)), node: new Date(Date.UTC(2017, 8, 2)) };
    const stream = coll.watch();
    assert.equal(await stream.tryNext(), null); // open before the first write
    const [p, n] = await Promise.all([
      pymongoReadingWrites(py, mongo.uri, DB, 'readings', { sensorId: 9101, start: starts.py }),
      nodeReadingWrites(coll, { sensorId: 9102, start: starts.node }, `Node driver ${NODE_DRIVER_VERSION}`),
    ]);
    t.diagnostic(`${p.driver}: ${p.calls} calls; ${n.driver}: ${n.calls} calls`);
    assert.deepEqual([p.count, n.count], [READINGS_LEFT, READINGS_LEFT]);
    // one change event per document written (what a node's listener replicates)
    const ops: Record<string, number> = {};
    let events = 0;
    for (const deadline = Date.now() + 30_000; events < 2 * READING_WRITE_EVENTS && Date.now() < deadline; ) {
      const e = await stream.tryNext();
      if (e) {
        events++;
        ops[e.operationType] = (ops[e.operationType] ?? 0) + 1;
      }
    }
    for (let i = 0; i < 5; i++) assert.equal(await stream.tryNext(), null, 'no more events');
    await stream.close();
    assert.deepEqual(ops, { insert: 2 * 48, update: 2 * 18, replace: 2 * 4, delete: 2 * 9 });
    // each driver's readings, by minute, without _id and the sensor
    const byMinute = async (sensor: number, start: Date) => {
      const docs = await coll.find({ sensor_id: sensor }).toArray();
      const out = new Map<number, Document>();
      for (const { _id, sensor_id, location, timestamp, ...rest } of docs) {
        assert.ok(location === undefined || location === sensor_id, JSON.stringify(rest));
        out.set(((timestamp as Date).getTime() - start.getTime()) / 60_000, rest);
      }
      return out;
    };
    const [pm, nm] = [await byMinute(9101, starts.py), await byMinute(9102, starts.node)];
    assert.deepEqual(
      [...pm.keys()].sort((a, b) => a - b),
      [...nm.keys()].sort((a, b) => a - b),
    );
    for (const [minute, doc] of pm) assert.deepEqual(nm.get(minute), doc, `the reading of minute ${minute}`);
    // what the writes did (the Node driver's readings equal pymongo's)
    assert.deepEqual(
      [...pm.keys()].filter((m) => [22, 25, 26, 27, 28, 29, 36, 37, 38].includes(m)),
      [],
      'the deleted readings are gone',
    );
    assert.deepEqual([pm.get(0)?.['temperature'], pm.get(0)?.['pressure']], [31.5, 94012.5], '$set and $inc');
    assert.equal('humidity' in pm.get(1)!, false, '$unset');
    assert.deepEqual([pm.get(5)?.['temperature'], pm.get(5)?.['checked']], [23.5, true], 'update many');
    assert.deepEqual([pm.get(10)?.['note'], 'humidity' in pm.get(10)!], ['replaced', false], 'a replace drops what the replacement lacks');
    assert.deepEqual([pm.get(100)?.['temperature'], pm.get(101)?.['temperature']], [12.25, 9], 'upserts, then an update and a replace of what they inserted');
    assert.deepEqual(pm.get(103), { temperature: 1 }, 'an upsert with operators in a bulk write');
    assert.deepEqual([pm.get(20)?.['temperature'], pm.get(21)?.['pressure'], pm.get(31)?.['batch']], [40, 90000, 2], 'find-and-modify, bulk update many');
    assert.ok(pm.has(62), 'the unacknowledged insert');
    assert.equal(await coll.countDocuments({ sensor_id: 1 }), 1, "the other sensor's reading is untouched");
  } finally {
    await client.close();
  }
});
