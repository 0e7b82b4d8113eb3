/**
 * make bench-function: what the Syncmesh function adds on top of the database.
 *
 * One node holding one sensor-month (real Sofia data when available, else generated), queried
 * by 10 concurrent clients, once through the function (HTTP, GraphQL, merge, JSON) and once
 * straight to the database with the driver running the same query. Prints a table and writes
 * JSON. Works unchanged against a real MongoDB through MONGODB_URI.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import { aggregatePipeline, buildFilter, SensorStore } from '../src/data/sensors.js';
import { METRICS, statsFor } from '../src/data/partials.js';
import { readSensorCsv } from '../src/load/csv.js';
import { generateSensorData } from '../src/load/generate.js';
import { loadReadings } from '../src/load/loader.js';
import { REPO_ROOT, sofiaFile, startLocalNode } from './node-process.js';

interface Case {
  name: string;
  body: Record<string, unknown>;
  direct: (coll: SensorStore['collection']) => Promise<unknown>;
}

const day = { start: new Date('2017-07-15T00:00:00Z'), end: new Date('2017-07-15T23:59:59Z') };
const month = { start: new Date('2017-07-01T00:00:00Z'), end: new Date('2017-07-30T23:59:59Z') };
const iso = (d: Date) => d.toISOString();

/** The statistics the aggregate cases select (the function computes only those; so does the direct query). */
const AVERAGES = statsFor(METRICS.map((m) => `average_${m}`));

const CASES: Case[] = [
  {
    name: 'collect 1 day',
    body: {
      query: `{ sensors(start_time: "${iso(day.start)}", end_time: "${iso(day.end)}") { timestamp temperature humidity pressure } }`,
      request_type: 'collect',
    },
    direct: (c) =>
      c
        .find(buildFilter(day), { projection: { timestamp: 1, temperature: 1, humidity: 1, pressure: 1 } })
        .sort({ timestamp: 1, _id: 1 })
        .toArray(),
  },
  {
    name: 'aggregate 1 day',
    body: {
      query: `{ sensorsAggregate(start_time: "${iso(day.start)}", end_time: "${iso(day.end)}") { count average_temperature average_humidity average_pressure } }`,
      request_type: 'aggregate',
    },
    direct: (c) => c.aggregate(aggregatePipeline(day, undefined, AVERAGES)).toArray(),
  },
  {
    name: 'aggregate 30 days',
    body: {
      query: `{ sensorsAggregate(start_time: "${iso(month.start)}", end_time: "${iso(month.end)}") { count average_temperature average_humidity average_pressure } }`,
      request_type: 'aggregate',
    },
    direct: (c) => c.aggregate(aggregatePipeline(month, undefined, AVERAGES)).toArray(),
  },
];

interface Stats {
  requests: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  throughput_rps: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Closed loop: `concurrency` workers send back-to-back requests for `seconds`. */
async function run(concurrency: number, seconds: number, once: () => Promise<void>): Promise<Stats> {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        await once();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    requests: latencies.length,
    p50_ms: r(percentile(latencies, 50)),
    p99_ms: r(percentile(latencies, 99)),
    mean_ms: r(latencies.reduce((s, x) => s + x, 0) / latencies.length),
    throughput_rps: r(latencies.length / elapsed),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      data: { type: 'string' },
      sensor: { type: 'string', default: '8' },
      concurrency: { type: 'string', default: '10' },
      seconds: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      out: { type: 'string', default: join(REPO_ROOT, 'bench-results', 'function.json') },
      'no-pin': { type: 'boolean', default: false },
    },
  });
  const sensor = Number(values.sensor);
  const concurrency = Number(values.concurrency);
  const seconds = Number(values.seconds);
  const warmup = Number(values.warmup);
  const file = sofiaFile(values.data, sensor);

  console.log(`starting one node (${process.env['MONGODB_URI'] ? 'MONGODB_URI' : 'MongoDB-compatible test server'}) ...`);
  const node = await startLocalNode('bench-node');
  // On a small machine the database, the function and the client fight for the same cores, and
  // the function's CPU then shows up as database queueing. Pin the test server to CPU 0 and the
  // function and this client to CPU 1, so both paths get the same database and the same client core.
  const pinned = !values['no-pin'] && node.mongo.pid !== undefined && availableParallelism() >= 2;
  if (pinned) {
    execFileSync('taskset', ['-a', '-pc', '0', String(node.mongo.pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-a', '-pc', '1', String(node.fn.pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-a', '-pc', '1', String(process.pid)], { stdio: 'ignore' });
    console.log('pinned: test server on CPU 0; function and client on CPU 1 (--no-pin to turn off)');
  }
  const client = await MongoClient.connect(node.mongo.uri, { maxPoolSize: concurrency });
  try {
    const store = new SensorStore(client.db('syncmesh'), 'sensor_data');
    await store.collection.deleteMany({});
    await store.ensureIndexes();
    const source = file ? readSensorCsv(file) : generateSensorData(sensor);
    const { count } = await loadReadings((b) => store.insert(b), source);
    console.log(`loaded ${count} readings from ${file ?? `the generator (sensor ${sensor})`}`);

    const results: Array<{ case: string; path: 'direct' | 'function'; stats: Stats; bytes: number; own_p50_ms: number }> = [];
    for (const c of CASES) {
      const payload = JSON.stringify(c.body);
      let bytes = 0;
      const ownMs: number[] = [];
      const viaFunction = async () => {
        const res = await fetch(node.url, { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' }, body: payload });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`function answered ${res.status}: ${text.slice(0, 200)}`);
        bytes = Number(res.headers.get('content-length') ?? text.length);
        const timing = (JSON.parse(text) as { extensions?: { timing?: { ms: number; db_ms: number } } }).extensions?.timing;
        if (timing) ownMs.push(timing.ms - timing.db_ms);
      };
      const direct = async () => {
        await c.direct(store.collection);
      };
      for (const [path, fn] of [
        ['direct', direct],
        ['function', viaFunction],
      ] as const) {
        process.stdout.write(`  ${c.name.padEnd(18)} ${path.padEnd(8)} warm-up ${warmup}s, measure ${seconds}s ... `);
        await run(concurrency, warmup, fn);
        ownMs.length = 0;
        const stats = await run(concurrency, seconds, fn);
        const own = [...ownMs].sort((a, b) => a - b);
        results.push({
          case: c.name,
          path,
          stats,
          bytes: path === 'function' ? bytes : 0,
          own_p50_ms: path === 'function' ? Math.round(percentile(own, 50) * 100) / 100 : 0,
        });
        console.log(`p50 ${stats.p50_ms} ms`);
      }
    }

    const rows = CASES.map((c) => {
      const d = results.find((r) => r.case === c.name && r.path === 'direct')!.stats;
      const f = results.find((r) => r.case === c.name && r.path === 'function')!;
      return {
        case: c.name,
        direct_p50_ms: d.p50_ms,
        function_p50_ms: f.stats.p50_ms,
        added_p50_ms: Math.round((f.stats.p50_ms - d.p50_ms) * 100) / 100,
        direct_p99_ms: d.p99_ms,
        function_p99_ms: f.stats.p99_ms,
        direct_rps: d.throughput_rps,
        function_rps: f.stats.throughput_rps,
        throughput_lost_pct: Math.round((1 - f.stats.throughput_rps / d.throughput_rps) * 1000) / 10,
        // Measured inside the function: its time for the request minus the time it waited for the database.
        function_own_p50_ms: f.own_p50_ms,
        answer_bytes: f.bytes,
      };
    });
    console.log(
      `\nbench-function: ${count} readings, ${concurrency} concurrent clients, ${seconds} s per cell (targets: added p50 <= 2 ms, throughput lost <= 10%)`,
    );
    console.table(rows);
    const out = {
      benchmark: 'function',
      database: process.env['MONGODB_URI'] ? 'MONGODB_URI' : 'mongo-java-server 1.47.0 (test server, scans without indexes)',
      readings: count,
      data: file ?? `generated sensor ${sensor}`,
      concurrency,
      seconds,
      pinned: pinned ? { database_cpu: 0, function_and_client_cpu: 1 } : false,
      rows,
      raw: results,
      measured_at: new Date().toISOString(),
    };
    mkdirSync(dirname(values.out!), { recursive: true });
    writeFileSync(values.out!, JSON.stringify(out, null, 2));
    console.log(`written ${values.out}`);
  } finally {
    await client.close();
    await node.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`bench-function: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
