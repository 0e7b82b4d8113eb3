/**
 * make bench-function: what the Syncmesh function (and, with RUNTIME=faasd, the faasd path in
 * front of it) adds on top of the database.
 *
 * One node holding one sensor-month (real Sofia data when available, else generated), queried
 * by concurrent clients along several paths, side by side in one run:
 *   direct    the driver runs the same query against the database (no HTTP)
 *   process   the function as a bare Node.js process (started here, same database)
 *   --http name=URL ...  more HTTP paths to the same function code, e.g. on a faasd node
 *             (`make bench-function RUNTIME=faasd`): the watchdog, the gateway container, the published port
 * Every path gets the same warm-up; then `--rounds` rounds measure each path for `--seconds`,
 * the order rotated every round so no path always runs first or last on a busy machine.
 * Latency percentiles and throughput come from @syncmesh-edge/bench-kit. Where the CPU goes:
 * every measured run also reads the CPU time of this client, the bare function process and the
 * groups given with `--cpu name=pid,...` (the faasd bench passes every service of its node), and
 * the machine's busy time; a second table gives CPU ms per request per group and path. Table, JSON
 * (bench-results/<--name>[-c<--concurrency>].json) and its PNG, all through @syncmesh-edge/bench-kit.
 *
 *   node functions/syncmesh/dist/bench/bench-function.js [--concurrency 10] [--seconds 4] [--rounds 3] [--warmup 3] [--data DIR] [--name function]
 *   make bench-function BENCH_ARGS="--concurrency 1 --seconds 1 --rounds 1 --warmup 1"
 * Works unchanged against a real MongoDB through MONGODB_URI (then nothing is loaded: the
 * database must hold the data; --load forces a reload).
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import {
  CpuMeter,
  hostInfo,
  MACHINE,
  parseCpuGroup,
  plotResults,
  printRows,
  resultsPath,
  runFor,
  summarize,
  writeResults,
  type CpuGroup,
  type Summary,
} from '@syncmesh-edge/bench-kit';
import { aggregatePipeline, buildFilter, SensorStore } from '../src/data/sensors.js';
import { METRICS, statsFor } from '../src/data/partials.js';
import { readSensorCsv } from '../src/load/csv.js';
import { generateSensorData } from '../src/load/generate.js';
import { loadReadings } from '../src/load/loader.js';
import { sofiaFile, startLocalNode } from '../testing/node-process.js';

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

/** One path's result for one case: every round's latencies together. */
interface PathResult {
  case: string;
  path: string;
  requests: number;
  elapsed_ms: number;
  ops_per_s: number;
  latency_ms: Summary;
  /** Answer size as received (gzip when the path compresses); 0 for the driver. */
  answer_bytes: number;
  /** CPU ms per request of each measured group and of the whole machine (`machine`), over every round. */
  cpu_ms_per_request: Record<string, number>;
}

const r2 = (x: number) => Math.round(x * 100) / 100;

/** An HTTP path: POST the body (accepting gzip, as the original client does), read it all, check 200. */
function httpPath(url: string, payload: string, onBytes: (n: number) => void): () => Promise<void> {
  return async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' }, body: payload });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 200)}`);
    onBytes(Number(res.headers.get('content-length') ?? Buffer.byteLength(text)));
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      data: { type: 'string' },
      sensor: { type: 'string', default: '8' },
      // given: the results are named <name>-c<N>, so runs with 1 and 10 clients sit side by side
      concurrency: { type: 'string' },
      seconds: { type: 'string', default: '4' },
      rounds: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '3' },
      http: { type: 'string', multiple: true, default: [] },
      name: { type: 'string', default: 'function' },
      label: { type: 'string', default: '' },
      load: { type: 'boolean', default: false },
      'no-pin': { type: 'boolean', default: false },
      // the bare process's environment beyond the defaults (NAME=VALUE, repeatable): the faasd
      // bench passes the deployed function's Node.js flags, so both run the same program alike
      'fn-env': { type: 'string', multiple: true, default: [] },
      // more processes whose CPU time is read around every measured run (name=pid,...; repeatable)
      cpu: { type: 'string', multiple: true, default: [] },
    },
  });
  const sensor = Number(values.sensor);
  const concurrency = Number(values.concurrency ?? '10');
  const name = values.concurrency === undefined ? values.name : `${values.name}-c${concurrency}`;
  const seconds = Number(values.seconds);
  const rounds = Number(values.rounds);
  const warmup = Number(values.warmup);
  const extra = values.http.map((spec) => {
    const m = /^([a-z][a-z0-9-]*)=(https?:\/\/\S+)$/.exec(spec);
    if (!m) throw new Error(`--http wants name=URL (a lowercase name), got ${JSON.stringify(spec)}`);
    return { path: m[1]!, url: m[2]! };
  });
  const file = sofiaFile(values.data, sensor);
  const realDb = process.env['MONGODB_URI'] !== undefined;

  console.log(`starting the function as a bare process (${realDb ? 'database: MONGODB_URI' : 'MongoDB-compatible test server'}) ...`);
  const fnEnv = Object.fromEntries(
    values['fn-env'].map((spec) => {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(spec);
      if (!m) throw new Error(`--fn-env wants NAME=VALUE, got ${JSON.stringify(spec)}`);
      return [m[1]!, m[2]!];
    }),
  );
  const node = await startLocalNode('bench-node', fnEnv);
  // On a small machine the database, the function and the client fight for the same cores, and
  // the function's CPU then shows up as database queueing. With a local test server and no other
  // paths, pin it to CPU 0 and the function and this client to CPU 1.
  const pinned = !values['no-pin'] && !realDb && extra.length === 0 && node.mongo.pid !== undefined && availableParallelism() >= 2;
  if (pinned) {
    execFileSync('taskset', ['-a', '-pc', '0', String(node.mongo.pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-a', '-pc', '1', String(node.fn.pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-a', '-pc', '1', String(process.pid)], { stdio: 'ignore' });
    console.log('pinned: test server on CPU 0; function and client on CPU 1 (--no-pin to turn off)');
  }
  const cpuGroups: CpuGroup[] = [
    { name: 'client', pids: [process.pid] },
    { name: 'process', pids: [node.fn.pid!] },
    ...(node.mongo.pid !== undefined ? [{ name: 'test-server', pids: [node.mongo.pid] }] : []),
    ...values.cpu.map(parseCpuGroup),
  ];
  const meter = new CpuMeter(cpuGroups);
  const client = await MongoClient.connect(node.mongo.uri, { maxPoolSize: concurrency });
  try {
    const store = new SensorStore(client.db('syncmesh'), 'sensor_data');
    let readings = await store.collection.estimatedDocumentCount();
    if (!realDb || values.load || readings === 0) {
      await store.collection.deleteMany({});
      await store.ensureIndexes();
      const source = file ? readSensorCsv(file) : generateSensorData(sensor);
      readings = (await loadReadings((b) => store.insert(b), source)).count;
      console.log(`loaded ${readings} readings from ${file ?? `the generator (sensor ${sensor})`}`);
    } else {
      console.log(`using the ${readings} readings already in the database`);
    }

    const paths = ['direct', 'process', ...extra.map((e) => e.path)];
    const results: PathResult[] = [];
    for (const c of CASES) {
      const payload = JSON.stringify(c.body);
      const bytes = new Map<string, number>();
      const ops = new Map<string, () => Promise<void>>([
        [
          'direct',
          async () => {
            await c.direct(store.collection);
          },
        ],
        ['process', httpPath(node.url, payload, (n) => bytes.set('process', n))],
        ...extra.map((e) => [e.path, httpPath(e.url, payload, (n) => bytes.set(e.path, n))] as const),
      ]);
      process.stdout.write(`  ${c.name.padEnd(18)} warm-up ${warmup} s per path ...`);
      for (const p of paths) await runFor({ workers: concurrency, durationMs: warmup * 1000, op: ops.get(p)! });
      const lat = new Map<string, number[]>(paths.map((p) => [p, []]));
      const elapsed = new Map<string, number>(paths.map((p) => [p, 0]));
      const cpu = new Map<string, Map<string, number>>(paths.map((p) => [p, new Map()]));
      for (let round = 0; round < rounds; round++) {
        const order = paths.map((_, i) => paths[(i + round) % paths.length]!);
        for (const p of order) {
          const { result: r, cpuMs } = await meter.measure(() => runFor({ workers: concurrency, durationMs: seconds * 1000, op: ops.get(p)! }));
          lat.get(p)!.push(...r.latencies_ms);
          elapsed.set(p, elapsed.get(p)! + r.elapsed_ms);
          const sum = cpu.get(p)!;
          for (const [g, ms] of cpuMs) sum.set(g, (sum.get(g) ?? 0) + ms);
        }
        process.stdout.write(` round ${round + 1}`);
      }
      for (const p of paths) {
        const l = lat.get(p)!;
        results.push({
          case: c.name,
          path: p,
          requests: l.length,
          elapsed_ms: r2(elapsed.get(p)!),
          ops_per_s: r2(l.length / (elapsed.get(p)! / 1000)),
          latency_ms: summarize(l),
          answer_bytes: bytes.get(p) ?? 0,
          cpu_ms_per_request: Object.fromEntries([...cpu.get(p)!].map(([g, ms]) => [g, Math.round((ms / l.length) * 1000) / 1000])),
        });
      }
      console.log(' done');
    }

    const of = (c: string, p: string) => results.find((r) => r.case === c && r.path === p)!;
    const last = paths[paths.length - 1]!;
    const rows = CASES.map((c) => {
      const row: Record<string, string | number> = { case: c.name };
      for (const p of paths) {
        row[`${p}_p50_ms`] = r2(of(c.name, p).latency_ms.p50);
        row[`${p}_rps`] = of(c.name, p).ops_per_s;
      }
      // each path against the one before it: what that hop adds
      for (let i = 1; i < paths.length; i++) {
        const [a, b] = [of(c.name, paths[i - 1]!), of(c.name, paths[i]!)];
        row[`${b.path}_adds_p50_ms`] = r2(b.latency_ms.p50 - a.latency_ms.p50);
      }
      if (last !== 'process') {
        const [p, f] = [of(c.name, 'process'), of(c.name, last)];
        row[`${last}_vs_process_added_p50_ms`] = r2(f.latency_ms.p50 - p.latency_ms.p50);
        row[`${last}_vs_process_throughput_lost_pct`] = Math.round((1 - f.ops_per_s / p.ops_per_s) * 1000) / 10;
      } else {
        const [d, p] = [of(c.name, 'direct'), of(c.name, 'process')];
        row['process_throughput_lost_pct'] = Math.round((1 - p.ops_per_s / d.ops_per_s) * 1000) / 10;
      }
      return row;
    });
    console.log(
      `\nbench-function${values.label ? ` (${values.label})` : ''}: ${readings} readings, ${concurrency} concurrent clients, ${rounds} rounds x ${seconds} s per path and case, order rotated`,
    );
    printRows('latency p50 (ms) and requests/s by path; *_adds_p50_ms: what the hop adds to the path before it', rows);
    const cpuRows = cpuTable(results, cpuGroups);
    printRows('CPU ms per request (user + system; every round of the path), by process group; machine = the whole machine, other = machine - groups', cpuRows);
    const out = resultsPath(name);
    writeResults(out, {
      benchmark: 'function',
      label: values.label || undefined,
      host: hostInfo(),
      database: realDb ? 'MONGODB_URI' : 'mongo-java-server 1.47.0 (test server, scans without indexes)',
      readings,
      data: file ?? `generated sensor ${sensor}`,
      concurrency,
      seconds_per_round: seconds,
      rounds,
      warmup_s: warmup,
      paths,
      urls: Object.fromEntries([['process', node.url], ...extra.map((e) => [e.path, e.url])]),
      pinned: pinned ? { database_cpu: 0, function_and_client_cpu: 1 } : false,
      rows,
      cpu_groups: cpuGroups,
      cpu_rows: cpuRows,
      raw: results,
      measured_at: new Date().toISOString(),
    });
    console.log(`written ${out}, ${plotResults('function', out)}`);
  } finally {
    await client.close();
    await node.stop();
  }
}

/** One row per case and path: CPU ms per request of every group that used any, the machine, and what no group explains. */
function cpuTable(results: PathResult[], groups: CpuGroup[]): Record<string, string | number>[] {
  const used = groups.map((g) => g.name).filter((g) => results.some((r) => (r.cpu_ms_per_request[g] ?? 0) >= 0.005));
  return results.map((r) => {
    const row: Record<string, string | number> = { case: r.case, path: r.path };
    let sum = 0;
    for (const g of groups.map((x) => x.name)) sum += r.cpu_ms_per_request[g] ?? 0;
    for (const g of used) row[g] = r2(r.cpu_ms_per_request[g] ?? 0);
    row[MACHINE] = r2(r.cpu_ms_per_request[MACHINE] ?? 0);
    row['other'] = r2((r.cpu_ms_per_request[MACHINE] ?? 0) - sum);
    return row;
  });
}

main().catch((err: unknown) => {
  console.error(`bench-function: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
