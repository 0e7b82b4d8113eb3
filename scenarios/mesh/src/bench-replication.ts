/**
 * `make bench-replication`: event-driven replication on the local mesh (no emulated latency).
 * Node-1 is the origin; 1, then 5 other nodes subscribe to it. Measures
 *  - latency: a reading inserted into node-1's MongoDB until its replica is readable on every
 *    subscriber (one reading at a time; p50/p99 over the samples), and
 *  - throughput: a burst of readings inserted as fast as node-1's MongoDB takes them, until the
 *    last replica is on every subscriber (events per second per origin node).
 * The path is the real one: change stream -> listener -> function /events -> outbox ->
 * /replicate on each subscriber -> its replica collection. Prints a table and writes JSON.
 */
import { readFileSync } from 'node:fs';
import { hostInfo, resultsPath, summarize, writeResults } from '@syncmesh-edge/bench-kit';
import { parseArgs } from 'node:util';
import { MongoClient, ObjectId, type Collection, type Document } from 'mongodb';
import { replicaId } from '@syncmesh-edge/syncmesh-fn/replica-id';
import type { MeshConfig } from './config.js';
import { meta } from './client.js';
import { down, up, type Progress } from './mesh.js';
import { throwIfInterrupted } from './bench.js';
import { MeshError } from './errors.js';

interface LatencyStats {
  samples: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface ReplicationRow {
  subscribers: number;
  latency: LatencyStats;
  burst_readings: number;
  burst_seconds: number;
  events_per_s: number;
}

/** Polling for a replica: every 2 ms when timing one reading, every 25 ms when waiting for a burst (so the bench's own reads load the subscribers' databases little). */
const POLL_MS = 2;
const BURST_POLL_MS = 25;

const reading = (i: number, sensorId = 9000): Document => ({
  _id: new ObjectId(),
  sensor_id: sensorId,
  location: 9000,
  lat: 42.7,
  lon: 23.3,
  timestamp: new Date(Date.UTC(2017, 7, 1) + i * 1000),
  temperature: 20,
  humidity: 50,
  pressure: 94000,
});

/** Polls each subscriber for the replica by its _id (an index lookup, also on the test server). */
async function waitVisible(
  replicas: Collection<{ _id: string }>[],
  origin: string,
  id: ObjectId,
  timeoutMs: number,
  signal: AbortSignal,
  pollMs = POLL_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const rid = replicaId(origin, id);
  for (const c of replicas) {
    while ((await c.findOne({ _id: rid }, { projection: { _id: 1 } })) === null) {
      throwIfInterrupted(signal);
      if (Date.now() > deadline) throw new Error(`reading ${id.toHexString()} not replicated within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }
}

export async function runReplicationBench(base: MeshConfig, progress: Progress, argv: string[], signal: AbortSignal): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      samples: { type: 'string', default: '200' },
      burst: { type: 'string', default: '5000' },
      out: { type: 'string', default: resultsPath('replication') },
    },
  });
  const samples = Number(values.samples);
  const burst = Number(values.burst);
  const cfg: MeshConfig = { ...base, nodes: 6, latency: 'none' };
  const mesh = await up(cfg, { progress, signal });
  const rows: ReplicationRow[] = [];
  const clients: MongoClient[] = [];
  try {
    const secret = readFileSync(mesh.topology.secret_file, 'utf8').trim();
    const nodes = mesh.topology.nodes;
    const connect = async (uri: string) => {
      const c = await MongoClient.connect(uri, { maxPoolSize: 4 });
      clients.push(c);
      return c;
    };
    const origin = (await connect(nodes[0]!.mongodb_uri)).db('syncmesh').collection('sensor_data');
    const replicaColls: Collection<{ _id: string }>[] = [];
    for (const n of nodes.slice(1)) replicaColls.push((await connect(n.mongodb_uri)).db('syncmesh').collection<{ _id: string }>('sensor_data_replicas'));
    let seq = 0;

    for (const subscribers of [1, 5]) {
      for (let i = 1; i <= subscribers; i++) {
        await meta(nodes[0]!.function_url, secret, `mutation { updateNode(id: "${nodes[i]!.id}", node: {subscribed: true, initial_sync: false}) { id } }`);
      }
      const targets = replicaColls.slice(0, subscribers);
      progress(`${subscribers} subscriber(s): warming up`);
      for (let i = 0; i < 20; i++) {
        const doc = reading(seq++);
        await origin.insertOne(doc);
        await waitVisible(targets, nodes[0]!.id, doc['_id'] as ObjectId, 30_000, signal);
      }
      progress(`${subscribers} subscriber(s): latency, ${samples} readings one at a time`);
      const lat: number[] = [];
      for (let i = 0; i < samples; i++) {
        const doc = reading(seq++);
        const t0 = performance.now();
        await origin.insertOne(doc);
        await waitVisible(targets, nodes[0]!.id, doc['_id'] as ObjectId, 30_000, signal);
        lat.push(performance.now() - t0);
      }
      const s = summarize(lat);
      const r1 = (x: number) => Math.round(x * 10) / 10;
      progress(`${subscribers} subscriber(s): burst of ${burst} readings`);
      // The burst's readings carry their own sensor id, so that each subscriber's count is exact.
      const burstSensor = 9100 + subscribers;
      const docs = Array.from({ length: burst }, () => reading(seq++, burstSensor));
      const t0 = performance.now();
      for (let i = 0; i < docs.length; i += 500) await origin.insertMany(docs.slice(i, i + 500));
      await waitVisible(targets, nodes[0]!.id, docs[docs.length - 1]!['_id'] as ObjectId, 300_000, signal, BURST_POLL_MS);
      // The last one visible does not prove the others are: count them all.
      const countDeadline = Date.now() + 300_000;
      for (const c of targets) {
        let have = 0;
        while ((have = await c.countDocuments({ _origin: nodes[0]!.id, sensor_id: burstSensor })) < burst) {
          throwIfInterrupted(signal);
          if (Date.now() > countDeadline) throw new MeshError('EDGE_MESH_REQUEST', `a subscriber holds ${have} of the burst's ${burst} replicas after 300 s`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const seconds = (performance.now() - t0) / 1000;
      rows.push({
        subscribers,
        latency: { samples: s.count, p50_ms: r1(s.p50), p99_ms: r1(s.p99), max_ms: r1(s.max) },
        burst_readings: burst,
        burst_seconds: r1(seconds),
        events_per_s: Math.round(burst / seconds),
      });
    }
  } finally {
    for (const c of clients) await c.close();
    await down(cfg.stateRoot, cfg.name, progress);
  }
  console.log('\nbench-replication: insert on node-1 -> replica readable on every subscriber (latency profile none)');
  console.table(
    rows.map((r) => ({
      subscribers: r.subscribers,
      'p50 ms': r.latency.p50_ms,
      'p99 ms': r.latency.p99_ms,
      'max ms': r.latency.max_ms,
      'burst events': r.burst_readings,
      'burst s': r.burst_seconds,
      'events/s': r.events_per_s,
    })),
  );
  console.log('targets: p50 <= 50 ms, >= 1,000 events/s sustained');
  writeResults(values.out!, { date: new Date().toISOString(), host: hostInfo(), rows });
  console.log(`written ${values.out}`);
  return 0;
}
