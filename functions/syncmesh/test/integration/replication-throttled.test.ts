/**
 * A resync to a slow subscriber converges, and applies every batch once (issue 25: a resync of
 * 20 batches to a busy subscriber timed out on every delivery, was sent again and again, and its
 * test server sat at 94 % CPU applying the same batches on top of each other, for good).
 *
 * The origin holds 100,000 generated readings. The subscriber runs as its own processes (the
 * function and its test server), both in one cgroup limited to 20 % of a CPU (cgroup v2 or v1,
 * lib/lab's createCpuLimit; needs root, skipped otherwise), and holds stale replicas of every
 * reading (another temperature), minus some, plus some the origin never had. Then the origin
 * gets a resync request, as its listener sends one after losing history. The snapshot must end
 * with replicas equal to the origin's readings (anti-entropy digests of every day agree), and
 * the subscriber's counters must show each batch applied once: applies == batches applied ==
 * the distinct batches the origin sent, no failed apply.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, MongoClient, ObjectId, type Document } from 'mongodb';
import { cpuLimitUnavailable, createCpuLimit, type CpuLimit } from '@syncmesh-edge/lab';
import { generateSensorData } from '../../src/load/generate.js';
import { replicaId } from '../../src/replication/ops.js';
import { startLocalNode, type LocalNode } from '../../testing/node-process.js';
import { addNode, eventually, MESH_SECRET, signFor, startNode, type TestNode } from './harness.js';

const READINGS = 100_000;
/** Replicas missing on the subscriber, and replicas of readings the origin never had. */
const MISSING = 1_000;
const STRAYS = 500;
const CPU_PERCENT = 20;
const CONVERGE_TIMEOUT_MS = 10 * 60_000;

const unavailable = cpuLimitUnavailable();
let origin: TestNode;
let sub: LocalNode;
let subClient: MongoClient;
let limit: CpuLimit | undefined;

before(async () => {
  if (unavailable) return;
  [origin, sub] = await Promise.all([
    startNode('thr-a', {}, { heapMb: 1024 }),
    startLocalNode(
      'thr-b',
      { SYNCMESH_MESH_SECRET: MESH_SECRET, SYNCMESH_ANTI_ENTROPY_INTERVAL_S: '0', SYNCMESH_WRITE_KEY_FILE: '/nonexistent/thr/write-key' },
      768,
    ),
  ]);
  subClient = await MongoClient.connect(sub.mongo.uri, { serverSelectionTimeoutMS: 30_000 });
});
after(async () => {
  limit?.remove();
  await subClient?.close();
  await Promise.all([origin?.close(), sub?.stop()]);
});

/** 100,000 readings of 6 generated sensors (July 2017), with their _ids. */
function readings(): Array<Document & { _id: ObjectId }> {
  const out: Array<Document & { _id: ObjectId }> = [];
  for (let sensor = 1; out.length < READINGS; sensor++) {
    for (const r of generateSensorData(sensor)) {
      out.push({ ...r, _id: new ObjectId() });
      if (out.length === READINGS) break;
    }
  }
  return out;
}

async function readyz(url: string): Promise<Record<string, any>> {
  const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(20_000) });
  return (await res.json()) as Record<string, any>;
}

test(`replication - a resync of ${READINGS} readings to a subscriber limited to ${CPU_PERCENT} % of a CPU converges, each batch applied once`, {
  skip: unavailable ? `cannot limit CPU here: ${unavailable}` : false,
}, async (t) => {
  const docs = readings();
  const own = origin.client.db('syncmesh').collection('sensor_data');
  for (let i = 0; i < docs.length; i += 5_000) await own.insertMany(docs.slice(i, i + 5_000));
  // The subscriber's replicas: stale (another temperature, an old revision), some missing, some strays.
  const stale: Document[] = docs.slice(MISSING).map(({ _id, ...fields }) => ({
    ...fields,
    temperature: (fields['temperature'] as number) + 100,
    _id: replicaId('thr-a', _id),
    _origin: 'thr-a',
    _origin_id: _id,
    _rev: 1,
  }));
  for (let i = 0; i < STRAYS; i++) {
    const _id = new ObjectId();
    stale.push({ ...docs[i]!, _id: replicaId('thr-a', _id), _origin: 'thr-a', _origin_id: _id, _rev: 1 });
  }
  const replicas = subClient.db('syncmesh').collection('sensor_data_replicas');
  for (let i = 0; i < stale.length; i += 5_000) await replicas.insertMany(stale.slice(i, i + 5_000));

  limit = createCpuLimit(`smthr-${process.pid}`, CPU_PERCENT);
  limit.add(sub.fn.pid!);
  limit.add(sub.mongo.pid!);
  t.diagnostic(`subscriber's function (pid ${sub.fn.pid}) and test server (pid ${sub.mongo.pid}) limited to ${CPU_PERCENT} % (cgroup v${limit.version})`);

  await addNode(origin, { id: 'thr-a', address: origin.url, lat: 42.69, lon: 23.32, own_node: true });
  await addNode(origin, { id: 'thr-b', address: sub.url, lat: 42.65, lon: 23.37, subscribed: true, initial_sync: false } as never);
  const started = Date.now();
  const text = BSON.EJSON.stringify({ db: 'syncmesh', coll: 'sensor_data', reason: 'history-lost' }, { relaxed: true });
  const res = await fetch(`${origin.url}/resync`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signFor(`${origin.url}/resync`, text, { origin: 'thr-a' }) },
    body: text,
  });
  assert.equal(res.status, 200, await res.text());

  let lastNote = 0;
  await eventually(
    'the snapshot queued and every batch acknowledged',
    async () => {
      const p = origin.app.replication.progress();
      const s = p.subscribers['thr-b'];
      if (Date.now() - lastNote > 20_000 && s) {
        lastNote = Date.now();
        t.diagnostic(
          `${Math.round((Date.now() - started) / 1000)} s: acked ${s.readings_acked}, pending ${s.readings_pending}, ${s.rate_per_s ?? '-'} readings/s, eta ${s.eta_s ?? '-'} s, ${s.request_readings} per request, ${s.apply_ms_per_reading ?? '-'} ms per reading, ${s.state}`,
        );
      }
      return p.snapshots.length === 0 && s !== undefined && s.batches_pending === 0 && s.in_flight.batches === 0 && s.readings_acked > 0;
    },
    CONVERGE_TIMEOUT_MS,
  );
  const seconds = (Date.now() - started) / 1000;
  const sent = origin.app.replication.progress().subscribers['thr-b']!;
  const usage = limit.usage();
  t.diagnostic(
    `converged in ${seconds.toFixed(0)} s (${Math.round(READINGS / seconds)} readings/s); the limited group used ${(usage.usageUs / 1e6).toFixed(1)} s of CPU, throttled in ${usage.throttledPeriods} of ${usage.periods} periods`,
  );
  const counters = (await readyz(sub.url))['replication']['origins']['thr-a'];
  t.diagnostic(`subscriber: ${JSON.stringify(counters)}; origin: ${sent.batches_acked} batches acknowledged, ${sent.readings_sent} readings sent`);
  limit.remove();

  // Each batch applied once: every apply the subscriber started finished, and there were as
  // many as distinct batches the origin had acknowledged (100 snapshot batches and the end).
  assert.equal(counters.failed_applies, 0);
  assert.equal(counters.applying, 0);
  assert.equal(counters.applies, counters.applied_batches, 'no apply started twice for one batch');
  assert.equal(counters.applied_batches, sent.batches_acked, 'applies == distinct batches');
  assert.equal(sent.batches_acked, Math.ceil(READINGS / 1000) + 1);
  assert.equal(counters.readings_applied, READINGS + 1);

  // The replicas equal the origin's readings: every day's digest agrees, strays and stale values gone.
  const [check] = await origin.app.replication.antiEntropy.check({ repair: false });
  assert.ok(check, 'the subscriber was compared');
  assert.equal(check.error, undefined, JSON.stringify(check.error));
  assert.deepEqual(check.differing, []);
  assert.equal(check.agrees, true);
  assert.equal(check.replica_readings, READINGS);
  assert.equal(await replicas.countDocuments({ _origin: 'thr-a' }), READINGS);
});
