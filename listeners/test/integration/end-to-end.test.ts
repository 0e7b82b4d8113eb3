/**
 * The whole replication path with real processes: node A's MongoDB -> the listener (a child
 * process, so it can be killed with -9) -> node A's Syncmesh function -> its outbox -> node B's
 * function -> B's replica collection. Each node has its own test server (or, with MONGODB_URI,
 * its own databases on a real replica set).
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type Document, type ObjectId } from 'mongodb';
import { ensurePymongo, resolveMongo, runPython, type MongoTarget } from '@syncmesh-edge/mongo-test-server';
import { MeshKeys, signV2 } from '@syncmesh-edge/mesh-auth';
import { waitForEvery } from '@syncmesh-edge/lab';
import { createLogger } from '@syncmesh-edge/log';
import { buildApp, loadConfig, type App } from '@syncmesh-edge/syncmesh-fn';
import { isStreaming, listenerUri, SECRET, startListener, waitUntil, type ListenerProcess } from '../../src/testing/harness.js';

interface FnNode {
  id: string;
  url: string;
  port: number;
  app: App;
  client: MongoClient;
  db: string;
  meta: string;
  mongo: MongoTarget;
}

let a: FnNode;
let b: FnNode;

async function listen(app: App, port = 0): Promise<number> {
  app.server.listen(port, '127.0.0.1');
  await once(app.server, 'listening');
  return (app.server.address() as AddressInfo).port;
}

/** Databases of node A; B must accept A's namespace to hold its replicas (on a real node both are "syncmesh"). */
const DB_A = 'e2e_node-a';

function makeApp(id: string, mongo: MongoTarget, client: MongoClient, db: string, meta: string): App {
  const config = loadConfig({
    MONGODB_URI: listenerUri(mongo.uri, mongo.kind),
    SYNCMESH_NODE_ID: id,
    SYNCMESH_MESH_SECRET: SECRET,
    SYNCMESH_DATABASES: db === DB_A ? db : `${db},${DB_A}`,
    SYNCMESH_META_DATABASE: meta,
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
  });
  return buildApp({ config, client, log: createLogger({ level: config.logLevel, svc: 'syncmesh-fn', node: id }) });
}

async function startFn(id: string): Promise<FnNode> {
  const mongo = await resolveMongo();
  const client = await MongoClient.connect(listenerUri(mongo.uri, mongo.kind));
  const db = `e2e_${id}`;
  const meta = `e2e_${id}_meta`;
  const app = makeApp(id, mongo, client, db, meta);
  await app.service.stores.ensureIndexes();
  await app.replication.start();
  const port = await listen(app);
  return { id, url: `http://127.0.0.1:${port}/function/syncmesh-fn`, port, app, client, db, meta, mongo };
}

async function stopServer(app: App): Promise<void> {
  app.server.closeAllConnections();
  await new Promise<void>((r) => app.server.close(() => r()));
}

async function closeFn(n: FnNode): Promise<void> {
  await n.app.replication.stop();
  await stopServer(n.app);
  if (n.mongo.kind === 'real') for (const d of [n.db, n.meta]) await n.client.db(d).dropDatabase();
  await n.client.close();
  await n.mongo.stop();
}

async function registry(at: FnNode, mutation: string): Promise<void> {
  const body = JSON.stringify({ request_type: 'meta', query: `mutation { ${mutation} }` });
  const res = await fetch(at.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signV2(new MeshKeys(SECRET), { method: 'POST', path: '/', origin: 'test-client', target: at.id, body }) },
    body,
  });
  assert.equal(res.status, 200, await res.text());
}

before(async () => {
  [a, b] = await Promise.all([startFn('node-a'), startFn('node-b')]);
  await registry(a, `addNode(node: {id: "node-a", address: "${a.url}", lat: 42.69, lon: 23.32, own_node: true}) { id }`);
  await registry(a, `addNode(node: {id: "node-b", address: "${b.url}", lat: 42.65, lon: 23.37, subscribed: true}) { id }`);
  await registry(b, `addNode(node: {id: "node-b", address: "${b.url}", lat: 42.65, lon: 23.37, own_node: true}) { id }`);
});
after(async () => {
  await Promise.all([a && closeFn(a), b && closeFn(b)]);
});

const replicasOnB = () => b.client.db(a.db).collection('sensor_data_replicas');

/** Inserts `total` readings on A in batches of 10; returns their ids. */
async function insertOnA(total: number, first: number, progress: { n: number }): Promise<string[]> {
  const coll = a.client.db(a.db).collection('sensor_data');
  const ids: string[] = [];
  for (let i = 0; i < total; i += 10) {
    const docs: Document[] = Array.from({ length: Math.min(10, total - i) }, (_, k) => ({
      sensor_id: 1,
      lat: 42.69,
      lon: 23.32,
      timestamp: new Date(Date.UTC(2017, 6, 1) + (first + i + k) * 150_000),
      temperature: 20 + ((i + k) % 10),
    }));
    const res = await coll.insertMany(docs);
    for (const id of Object.values(res.insertedIds)) ids.push(id.toHexString());
    progress.n = ids.length;
  }
  return ids;
}

async function replicaIdsOnB(): Promise<string[]> {
  const docs = await replicasOnB()
    .find({ _origin: 'node-a' }, { projection: { _origin_id: 1 } })
    .toArray();
  return docs.map((d) => String(d['_origin_id'])).sort();
}

function listenerEnv(): Record<string, string> {
  return {
    MONGODB_URI: listenerUri(a.mongo.uri, a.mongo.kind),
    LISTENER_DATABASE: a.db,
    LISTENER_META_DATABASE: a.meta,
    LISTENER_COLLECTIONS: 'sensor_data',
    SYNCMESH_FUNCTION_URL: a.url,
    LISTENER_NODE_ID: 'node-a',
    LISTENER_RETRY_BASE_MS: '50',
    LISTENER_RETRY_MAX_MS: '1000',
    LISTENER_POLL_MAX_MS: '50',
    LOG_LEVEL: 'info',
  };
}

test('end to end - kill -9 the listener during 1,000 inserts on A: B ends with exactly the 1,000 replicas', async (t) => {
  let listener: ListenerProcess = startListener(listenerEnv());
  try {
    await listener.waitForLog(isStreaming, 30_000, 'the listener streaming');
    const progress = { n: 0 };
    const inserting = insertOnA(1_000, 0, progress);
    await waitUntil(async () => (await replicasOnB().countDocuments()) >= 200, 60_000, '200 replicas on B');
    await listener.kill('SIGKILL');
    const onBAtKill = await replicasOnB().countDocuments();
    const ids = await inserting;
    assert.ok(onBAtKill < 1_000, `the kill landed mid-way (${onBAtKill} replicas on B)`);

    listener = startListener(listenerEnv());
    await waitUntil(async () => (await replicasOnB().countDocuments()) >= 1_000, 120_000, '1,000 replicas on B');
    await waitUntil(async () => (await a.app.replication.outbox.pending()) === 0, 90_000, "A's outbox drained");
    assert.equal(await replicasOnB().countDocuments(), 1_000, 'no duplicates');
    assert.deepEqual(await replicaIdsOnB(), [...ids].sort(), 'exactly the inserted readings');
    t.diagnostic(`killed with ${onBAtKill} replicas on B and ${progress.n} inserted`);
  } finally {
    await listener.kill('SIGTERM');
  }
});

test("end to end - A's function down for 30 seconds during inserts: nothing lost, nothing doubled", async (t) => {
  const listener = startListener(listenerEnv());
  try {
    await listener.waitForLog(isStreaming, 30_000, 'the listener streaming');
    const before = await replicaIdsOnB();
    await stopServer(a.app);
    const downAt = Date.now();
    const progress = { n: 0 };
    const ids = await insertOnA(1_000, 1_000, progress);
    await listener.waitForLog((l) => l.msg === 'delivery state: function-unavailable', 30_000, 'the listener noticing the outage');
    await waitUntil(() => Date.now() - downAt >= 30_000, 40_000, 'the 30 s outage');
    assert.equal(await replicasOnB().countDocuments(), before.length, 'nothing replicated while A is down');
    // Same port, same URL: the function comes back as faasd would restart it.
    await listen(a.app, a.port);
    await waitUntil(async () => (await replicasOnB().countDocuments()) >= before.length + 1_000, 120_000, 'all replicas after the outage');
    await waitUntil(async () => (await a.app.replication.outbox.pending()) === 0, 90_000, "A's outbox drained");
    assert.deepEqual(await replicaIdsOnB(), [...before, ...ids].sort());
    t.diagnostic(`function down ${Date.now() - downAt} ms; ${ids.length} readings inserted meanwhile`);
  } finally {
    await listener.kill('SIGTERM');
  }
});

/** pymongo's update_one on A: prints when it returned (epoch ms). */
const PYMONGO_UPDATE = `
import sys, time
from bson import ObjectId
from pymongo import MongoClient
uri, db, oid, temperature = sys.argv[1:5]
client = MongoClient(uri)
res = client[db].sensor_data.update_one({"_id": ObjectId(oid)}, {"$set": {"temperature": float(temperature)}})
print(res.modified_count, time.time() * 1000)
`;

test('end to end - a pymongo update_one($set) on A reaches B as an update, with no resync', async (t) => {
  const py = await ensurePymongo();
  const listener = startListener(listenerEnv());
  try {
    await listener.waitForLog(isStreaming, 30_000, 'the listener streaming');
    const { insertedId } = await a.client
      .db(a.db)
      .collection('sensor_data')
      .insertOne({ sensor_id: 7, lat: 42.69, lon: 23.32, timestamp: new Date(Date.UTC(2017, 6, 2)), temperature: 20.5, humidity: 40 });
    const replica = () => replicasOnB().findOne({ _origin: 'node-a', _origin_id: insertedId });
    await waitUntil(async () => (await replica()) !== null, 60_000, 'the reading replicated to B');
    const resyncsBefore = listener.count((l) => l.msg === 'requesting a full resync of the subscribers');
    const updates: number[] = [];
    for (const temperature of [21.5, 22.5, 23.5]) {
      // B is polled every 5 ms from before pymongo starts: the python process may still be
      // exiting when the new value is there already
      let seenAt = 0;
      const seen = waitForEvery(
        `temperature ${temperature} on B`,
        async () => {
          if ((await replica())?.['temperature'] === temperature) seenAt = Date.now();
          return seenAt > 0;
        },
        60_000,
        5,
      );
      const args = ['-c', PYMONGO_UPDATE, listenerUri(a.mongo.uri, a.mongo.kind), a.db, (insertedId as ObjectId).toHexString(), String(temperature)];
      const [modified, at] = (await runPython(py, args)).trim().split(' ').map(Number);
      assert.equal(modified, 1, 'pymongo updated the reading');
      await seen;
      updates.push(seenAt - at!);
      const doc = (await replica())!;
      assert.equal(doc['humidity'], 40, 'the rest of the reading is kept');
      assert.equal(doc['sensor_id'], 7);
    }
    assert.equal(
      listener.count((l) => l.msg === 'requesting a full resync of the subscribers'),
      resyncsBefore,
      'no resync',
    );
    assert.equal(
      listener.count((l) => l['code'] === 'EDGE_LISTENER_MALFORMED_EVENT'),
      0,
    );
    t.diagnostic(`pymongo ${py.version}: update_one on A -> the new value in B's replica after ${updates.map((ms) => `${Math.round(ms)} ms`).join(', ')}`);
  } finally {
    await listener.kill('SIGTERM');
  }
});
