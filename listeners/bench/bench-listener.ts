/**
 * Listener benchmark: insert-on-A to delivered-to-the-function latency (p50/p99) at a steady
 * rate, and sustained events/s when inserts come as fast as the server takes them. The function
 * is the HTTP stand-in (it verifies signatures and records), so this measures the listener's
 * part of replication; end-to-end insert-on-A to visible-on-B is `make bench-replication`.
 *
 *   make bench-listener [BENCH_ARGS="--rate 200 --seconds 10 --burst 20000"]
 *   node listeners/dist/bench/bench-listener.js [--rate 200] [--seconds 10] [--burst 20000] [--name listener]
 *
 * A table, bench-results/<name>.json and its PNG; percentiles (nearest rank), host metadata and
 * the output from @syncmesh-edge/bench-kit.
 *
 * LISTENER_* variables in the environment are passed to the listener (e.g. LISTENER_BATCH_WAIT_MS).
 * Uses MONGODB_URI when set (a real MongoDB replica set), else starts the test server.
 */
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import { hostInfo, plotResults, printTable, resultsPath, summarize, writeResults } from '@syncmesh-edge/bench-kit';
import { resolveMongo } from '@syncmesh-edge/mongo-test-server';
import { startFunctionStandIn } from '../src/testing/standin.js';
import { listenerUri, SECRET, startListener, isStreaming } from '../src/testing/harness.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '10' },
    burst: { type: 'string', default: '20000' },
    name: { type: 'string', default: 'listener' },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const burst = Number(values.burst);

const mongo = await resolveMongo();
const uri = listenerUri(mongo.uri, mongo.kind);
const client = await MongoClient.connect(uri);
const fn = await startFunctionStandIn(SECRET, 0, 'bench-a');
const db = `bench_listener_${Date.now()}`;
const listener = startListener({
  MONGODB_URI: uri,
  LISTENER_DATABASE: db,
  LISTENER_META_DATABASE: `${db}_meta`,
  SYNCMESH_FUNCTION_URL: fn.url,
  LISTENER_NODE_ID: 'bench-a',
  LOG_LEVEL: 'info',
  // LISTENER_* tuning set for the benchmark run is passed on to the listener.
  ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('LISTENER_') && e[1] !== undefined)),
});
try {
  await listener.waitForLog(isStreaming, 30_000, 'listener streaming');
  await fn.waitFor(() => fn.resyncs.length === 1, 10_000, 'first-start resync');
  const coll = client.db(db).collection('sensor_data');

  // Latency: one insert every 1/rate s; the stand-in timestamps each arrival.
  const latencies: number[] = [];
  fn.onEvents = (events, at) => {
    for (const e of events) {
      const t0 = e.doc?.['t0'];
      if (e.op === 'insert' && typeof t0 === 'number') latencies.push(at - t0);
    }
  };
  const total = Math.round(rate * seconds);
  const start = Date.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    await coll.insertOne({ phase: 'latency', i, t0: Date.now() });
  }
  await fn.waitFor(() => latencies.length >= total, 60_000, 'all latency inserts delivered');
  const latency = summarize(latencies);

  // Throughput: insert `burst` documents in batches of 100 as fast as possible.
  fn.onEvents = undefined;
  const before = fn.events.length;
  const t1 = Date.now();
  let firstAt = 0;
  fn.onEvents = (_e, at) => (firstAt ||= at);
  const inserting = (async () => {
    for (let i = 0; i < burst; i += 100) {
      await coll.insertMany(Array.from({ length: Math.min(100, burst - i) }, (_, k) => ({ phase: 'burst', i: i + k })));
    }
  })();
  await inserting;
  const insertMs = Date.now() - t1;
  await fn.waitFor(() => fn.events.length - before >= burst, 300_000, 'all burst inserts delivered');
  const deliverMs = Date.now() - t1;
  const result = {
    benchmark: 'listener',
    command: `make bench-listener BENCH_ARGS="--rate ${rate} --seconds ${seconds} --burst ${burst}"`,
    host: hostInfo(),
    server: mongo.kind,
    latency: { rate, seconds, count: latency.count, p50_ms: latency.p50, p90_ms: latency.p90, p99_ms: latency.p99, max_ms: latency.max },
    throughput: { events: burst, insert_events_per_s: Math.round(burst / (insertMs / 1000)), delivered_events_per_s: Math.round(burst / (deliverMs / 1000)) },
    measured_at: new Date().toISOString(),
  };
  printTable(
    `listener benchmark (database: ${mongo.kind})`,
    ['measure', 'value'],
    [
      [`insert -> delivered p50 (${rate}/s for ${seconds} s), ms`, result.latency.p50_ms],
      ['insert -> delivered p99, ms', result.latency.p99_ms],
      ['server insert rate (batches of 100), events/s', result.throughput.insert_events_per_s],
      [`sustained delivery (${burst} events), events/s`, result.throughput.delivered_events_per_s],
    ],
  );
  const out = writeResults(resultsPath(values.name), result);
  console.log(`\nwritten ${out}, ${plotResults('listener', out)}`);
} finally {
  await listener.kill('SIGTERM');
  await fn.close();
  if (mongo.kind === 'real') {
    await client.db(db).dropDatabase();
    await client.db(`${db}_meta`).dropDatabase();
  }
  await client.close();
  await mongo.stop();
}
