/**
 * Listener benchmark: insert-on-A to delivered-to-the-function latency (p50/p99) at a steady
 * rate, and sustained events/s when inserts come as fast as the server takes them. The function
 * is the HTTP stand-in (it verifies signatures and records), so this measures the listener's
 * part of replication; end-to-end insert-on-A to visible-on-B is `make bench-replication`.
 *
 *   node listeners/dist/src/scripts/bench.js [--rate 200] [--seconds 10] [--burst 20000] [--out bench-results/listener.json]
 *
 * LISTENER_* variables in the environment are passed to the listener (e.g. LISTENER_BATCH_WAIT_MS).
 * Uses MONGODB_URI when set (a real MongoDB replica set), else starts the test server.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import { percentileOfSorted } from '@syncmesh-edge/bench-kit';
import { resolveMongo } from '@syncmesh-edge/mongo-test-server';
import { startFunctionStandIn } from '../testing/standin.js';
import { listenerUri, SECRET, startListener, isStreaming } from '../testing/harness.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '10' },
    burst: { type: 'string', default: '20000' },
    out: { type: 'string', default: 'bench-results/listener.json' },
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
  latencies.sort((a, b) => a - b);

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
    server: mongo.kind,
    latency: {
      rate,
      count: latencies.length,
      p50_ms: percentileOfSorted(latencies, 50),
      p99_ms: percentileOfSorted(latencies, 99),
      max_ms: latencies[latencies.length - 1],
    },
    throughput: { events: burst, insert_events_per_s: Math.round(burst / (insertMs / 1000)), delivered_events_per_s: Math.round(burst / (deliverMs / 1000)) },
  };
  console.log('\nlistener benchmark (' + mongo.kind + ')');
  console.log('| measure | value |\n| --- | --- |');
  console.log(`| insert -> delivered p50 (${rate}/s for ${seconds} s) | ${result.latency.p50_ms} ms |`);
  console.log(`| insert -> delivered p99 | ${result.latency.p99_ms} ms |`);
  console.log(`| server insert rate (batches of 100) | ${result.throughput.insert_events_per_s} events/s |`);
  console.log(`| sustained delivery (${burst} events) | ${result.throughput.delivered_events_per_s} events/s |`);
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, JSON.stringify(result, null, 2) + '\n');
  console.log(`\nwrote ${values.out}`);
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
