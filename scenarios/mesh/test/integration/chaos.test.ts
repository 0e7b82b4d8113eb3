/**
 * The chaos test: a 5-node mesh (test server on disk, committing every write before answering
 * it; function, listener and MISO agent per node; every node subscribes to its two ring
 * neighbours) under a seeded fault plan — kill -9 of the function, listener, agent or database
 * of any node, partitions (toxiproxy cut + iptables DROP), clean restarts and freezes (SIGSTOP)
 * of a test server, and one outage: a node down (function, listener, agent) while its database
 * takes more writes than its oplog holds (CHAOS_OUTAGE_READINGS inserts plus updates, replaces
 * and deletes), so its listener must resync when it is back — while two writers insert, update
 * and delete readings through the functions and replace and update them straight in the
 * databases with the driver, a CRDT worker updates a gcounter, a pncounter and an orset
 * through the agents, and a reader sends mesh-wide aggregates. Then everything is healed and,
 * polling with a deadline, the test checks:
 *  - every acknowledged insert is on its origin and on both subscribers exactly once, with the
 *    version of its last acknowledged write, the same fields everywhere (0 lost, 0 stale, 0
 *    duplicated);
 *  - every acknowledged delete is gone everywhere; nobody holds a reading twice or one its
 *    origin lacks;
 *  - the outage's listener asked for a resync;
 *  - every agent holds the same CRDT state, equal to the acknowledged ops;
 *  - no request hung past its client deadline (errors during faults are allowed).
 * The seed is printed first; CHAOS_SEED=n replays the fault plan, CHAOS_DURATION_S sets the
 * length of the chaos phase (default 25 s here; `make test-chaos` runs a longer one, with a
 * 20,000-reading outage).
 * To narrow a finding down: CHAOS_KINDS (e.g. `db-restart`), CHAOS_FREEZE_MAX_MS (longest
 * database freeze, default 3000), CHAOS_REPORT_FILE (every request, fault window and the verdict
 * as JSON), CHAOS_LOG_DIR (keep the node processes' logs). See the README's "Chaos test".
 * Needs root (namespaces), toxiproxy and iptables (make tools) and the built workspaces.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  countFaults,
  CrdtModel,
  DEFAULT_WEIGHTS,
  FAULT_KINDS,
  planFaults,
  planOutage,
  Prng,
  queryStats,
  randomSeed,
  verifyCrdts,
  verifyData,
  type CrdtObservation,
  type DataVerdict,
  type QueryRecord,
  type WriteRecord,
} from '../../src/chaos/chaos.js';
import {
  CHAOS_EPOCH_MS,
  CHAOS_REPLICA,
  CRDT_FUNCTION,
  CRDT_NAMES,
  CRDT_OBJECT,
  FaultDriver,
  readHoldings,
  runOutage,
  WRITE_MIX,
  type OutageReport,
  type WriteOp,
  runCrdtWorker,
  runReader,
  runWriter,
  SDK_MAIN,
  timedPost,
  sdkClients,
  withDeadline,
  type SdkClient,
  type WorkerContext,
} from '../../src/chaos/driver.js';
import { meta } from '../../src/client/client.js';
import { loadConfig, REPO_ROOT, type MeshConfig } from '../../src/config.js';
import { down, up, type MeshHandle } from '../../src/mesh.js';
import { freeTestSubnet, netnsSkipReason, tempStateRoot, TOXIPROXY_BIN, uniqueMeshName } from '../../src/testing/helpers.js';
import { leftovers } from '@syncmesh-edge/lab';
import { MongoClient } from 'mongodb';

const NODES = 5;
const seed = process.env['CHAOS_SEED'] ? Number(process.env['CHAOS_SEED']) : randomSeed();
const durationS = Number(process.env['CHAOS_DURATION_S'] ?? 25);
/** Readings written into the outage node's database while it is down (0: no outage). */
const outageReadings = Number(process.env['CHAOS_OUTAGE_READINGS'] ?? 2_000);
/** Every test server's oplog keeps half of that: the outage writes more than it holds, so a resync follows. */
const oplogMaxEntries = Math.max(200, Math.floor(outageReadings / 2));
/**
 * Each test server's heap: the test server keeps query results, the oplog's documents and the
 * snapshot batches in its heap; 96 MB ran out (OutOfMemoryError) on the outage node of a
 * 20,000-reading outage, so 1 MB more per 100 readings.
 */
const mongoHeapMb = 96 + Math.ceil(outageReadings / 100);
/** CHAOS_WRITES=insert,delete narrows the writers' mix (default: insert, delete, update, replace, set). */
const writeOps = (process.env['CHAOS_WRITES'] ?? Object.keys(WRITE_MIX).join(',')).split(',').map((s) => s.trim()) as WriteOp[];
// printed before anything else, so a failed or interrupted run can always be replayed
console.log(
  `# chaos seed=${seed} duration_s=${durationS} outage_readings=${outageReadings} writes=${writeOps.join(',')} (replay: CHAOS_SEED=${seed} CHAOS_DURATION_S=${durationS} CHAOS_OUTAGE_READINGS=${outageReadings} CHAOS_WRITES=${writeOps.join(',')})`,
);

const builtMains = [
  join(REPO_ROOT, 'functions', 'syncmesh', 'dist', 'src', 'main.js'),
  join(REPO_ROOT, 'listeners', 'dist', 'src', 'main.js'),
  join(REPO_ROOT, 'miso-agent', 'dist', 'src', 'main.js'),
  SDK_MAIN,
];
const skip =
  (!Number.isInteger(seed) || seed < 0 ? `CHAOS_SEED must be a non-negative integer, got ${process.env['CHAOS_SEED']}` : false) ||
  (!(durationS >= 5) ? `CHAOS_DURATION_S must be at least 5, got ${process.env['CHAOS_DURATION_S']}` : false) ||
  (!(Number.isInteger(outageReadings) && outageReadings >= 0)
    ? `CHAOS_OUTAGE_READINGS must be a non-negative integer, got ${process.env['CHAOS_OUTAGE_READINGS']}`
    : false) ||
  (!writeOps.includes('insert') || writeOps.some((o) => !(o in WRITE_MIX))
    ? `CHAOS_WRITES must list insert and any of ${Object.keys(WRITE_MIX).join(', ')}, got ${process.env['CHAOS_WRITES']}`
    : false) ||
  netnsSkipReason() ||
  builtMains.map((m) => (existsSync(m) ? false : `needs ${m} (make build)`)).find(Boolean) ||
  false;

/** The function's deadlines: short, so partitions cost seconds, not tens of seconds. */
const NODE_TIMEOUT_MS = 2_000;
const FN_DEADLINE_MS = 5_000;
/** The function's deadline for a whole request (SYNCMESH_REQUEST_DEADLINE_MS, at least FN_DEADLINE_MS). */
const REQUEST_DEADLINE_MS = FN_DEADLINE_MS + 3_000;
/** A request without an answer this long hung (the function's deadline plus room for a loaded 2-core machine). */
const CLIENT_DEADLINE_MS = FN_DEADLINE_MS + 5_000;
/** SDK calls' own deadline. */
const SDK_DEADLINE_MS = 2_000;
/** After the heal: replication (retry backoff up to 30 s) and anti-entropy must converge within this. */
const CONVERGE_DEADLINE_MS = 180_000;
const POLL_MS = 500;

const name = uniqueMeshName('smc');
// Outside 10.100-199 (default subnets of mesh names) and 10.53 (the mDNS test).
const subnet = await freeTestSubnet(54);
const stateRoot = tempStateRoot();
const dataDir = mkdtempSync(join(tmpdir(), 'chaos-data-'));
/** Data writes carry it (`Authorization: Bearer`), for functions that require a write key. */
let cfg: MeshConfig;
let mesh: MeshHandle;
let clients: SdkClient[] = [];
/** One driver client per node's database: the writes that bypass the function, and the outage's. */
let databases: MongoClient[] = [];
/** Ends the outage's background watch (also when the test fails before it would). */
const watchEnd = new AbortController();

const TINY_ROWS = 5;
/** TINY_ROWS readings per node, in the Sofia CSV format: the loader sets each node's own location from them. */
function writeTinyData(): void {
  mkdirSync(dataDir, { recursive: true });
  for (let i = 1; i <= NODES; i++) {
    const rows = ['sensor_id,location,lat,lon,timestamp,pressure,temperature,humidity'];
    for (let k = 0; k < TINY_ROWS; k++)
      rows.push(`${i},${i},${(42.6 + i / 100).toFixed(3)},${(23.3 + i / 100).toFixed(3)},2017-07-01T00:0${k}:00,94000,${20 + k},50`);
    writeFileSync(join(dataDir, `${i}.csv`), `${rows.join('\n')}\n`);
  }
}

/** Ring: node i's writes go to nodes i-1 and i+1. */
const subscribersOf = (origin: number): number[] => [((origin + NODES - 2) % NODES) + 1, (origin % NODES) + 1];

before(async () => {
  if (skip) return;
  writeTinyData();
  cfg = loadConfig({
    MESH_NAME: name,
    MESH_NODES: String(NODES),
    MESH_SUBNET: subnet,
    MESH_STATE_DIR: stateRoot,
    MESH_DATA: dataDir,
    // on disk, so that a restarted test server still holds everything it acknowledged
    MESH_MONGO_STORAGE: 'disk',
    MESH_MONGO_HEAP_MB: String(mongoHeapMb),
    MESH_MONGO_OPLOG_MAX_ENTRIES: String(oplogMaxEntries),
    MESH_NODE_TIMEOUT_MS: String(NODE_TIMEOUT_MS),
    MESH_DEADLINE_MS: String(FN_DEADLINE_MS),
    // an acknowledged CRDT op is in the agent's database (the write-behind default may lose the
    // last 100 ms of ops on kill -9, as the agent's README says)
    MESH_MISO_PERSIST_DELAY_MS: '0',
    MESH_START_CONCURRENCY: '2',
    // a whole request (its own database calls included) is answered within this, below the
    // client's deadline (functions that have SYNCMESH_REQUEST_DEADLINE_MS)
    MESH_REQUEST_DEADLINE_MS: String(REQUEST_DEADLINE_MS),
    TOXIPROXY_BIN,
  });
  mesh = await up(cfg, { progress: (m) => console.log(`# chaos up: ${m}`) });
  const secret = readFileSync(mesh.topology.secret_file, 'utf8').trim();
  for (let i = 1; i <= NODES; i++) {
    const subs = subscribersOf(i)
      .map((s, k) => `s${k}: updateNode(id: "node-${s}", node: {subscribed: true}) { id }`)
      .join(' ');
    await meta(mesh.topology.nodes[i - 1]!.function_url, secret, `mutation { ${subs} }`);
  }
  clients = await sdkClients(mesh.topology, mesh.plan.stateDir, SDK_DEADLINE_MS);
  // short server selection: a write to a database that is down fails fast and certainly unsent
  databases = await Promise.all(
    mesh.topology.nodes.map((n) =>
      MongoClient.connect(n.mongodb_uri, {
        serverSelectionTimeoutMS: 2_000,
        connectTimeoutMS: 2_000,
        socketTimeoutMS: CLIENT_DEADLINE_MS,
        retryWrites: false,
        maxPoolSize: 4,
      }),
    ),
  );
});

after(async () => {
  watchEnd.abort();
  for (const c of clients) c.close();
  await Promise.all(databases.map((d) => d.close(true)));
  if (!skip) await down(stateRoot, name);
  rmSync(stateRoot, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

async function readCrdts(): Promise<CrdtObservation[]> {
  return Promise.all(
    clients.map(async (c, i) => {
      await withDeadline(c.register(CRDT_FUNCTION, CHAOS_REPLICA), CLIENT_DEADLINE_MS);
      const g = await withDeadline(c.read(CRDT_FUNCTION, CRDT_OBJECT, CRDT_NAMES.gcounter, 'gcounter'), CLIENT_DEADLINE_MS);
      const pn = await withDeadline(c.read(CRDT_FUNCTION, CRDT_OBJECT, CRDT_NAMES.pncounter, 'pncounter'), CLIENT_DEADLINE_MS);
      const or = await withDeadline(c.read(CRDT_FUNCTION, CRDT_OBJECT, CRDT_NAMES.orset, 'orset'), CLIENT_DEADLINE_MS);
      return { node: i + 1, gcounter: Number(g.value), pncounter: Number(pn.value), orset: [...(or.value as string[])].sort() };
    }),
  );
}

const clean = (v: DataVerdict) => v.losses.length + v.duplicates.length + v.resurrected.length + v.orphans.length + v.stale.length === 0;
/** The outage's least hold (it lasts until its writes are done). */
const OUTAGE_HOLD_MS = 5_000;

test('mesh chaos - acknowledged writes, updates, replaces, deletes and CRDT ops survive kill -9 (also of a database), partitions, database restarts and an outage past the oplog; nothing hangs', {
  skip,
  timeout: (durationS + 900) * 1000,
}, async () => {
  const durationMs = durationS * 1000;
  const freezeMaxMs = Number(process.env['CHAOS_FREEZE_MAX_MS'] ?? 3_000);
  // CHAOS_KINDS=kill,partition: only these kinds (to narrow down a finding); default all
  const kinds = process.env['CHAOS_KINDS'] ? process.env['CHAOS_KINDS'].split(',').map((k) => k.trim()) : [...FAULT_KINDS];
  const weights = Object.fromEntries(FAULT_KINDS.map((k) => [k, kinds.includes(k) ? DEFAULT_WEIGHTS[k] : 0]));
  const outage = outageReadings > 0 ? planOutage(seed, NODES, durationMs, OUTAGE_HOLD_MS) : undefined;
  const faults = planFaults({
    seed,
    nodes: NODES,
    durationMs,
    weights,
    holdMs: { 'db-freeze': [Math.min(500, freezeMaxMs / 2), freezeMaxMs] },
    reserved: outage ? [outage] : [],
  });
  console.log(`# chaos plan: ${faults.length} faults ${JSON.stringify(countFaults(faults))}`);
  const rng = new Prng(seed);
  const queries: QueryRecord[] = [];
  const writes: WriteRecord[] = [];
  const model = new CrdtModel();
  let key = 0;
  const nextKey = () => CHAOS_EPOCH_MS + 1000 * key++;
  let version = 0;
  const stop = new AbortController();
  const t0 = performance.now();
  const ctx: WorkerContext = {
    topology: mesh.topology,
    queries,
    t0,
    deadlineMs: CLIENT_DEADLINE_MS,
    stop: stop.signal,
    writeKey: readFileSync(mesh.topology.write_key_file, 'utf8').trim(),
    databases,
    nextVersion: () => ++version,
  };
  const log = (line: string) => console.log(`# chaos ${line}`);
  let outageReport: OutageReport | undefined;
  let caughtUp: Promise<void> = Promise.resolve();
  const driver = new FaultDriver(cfg, log, async (node, restart) => {
    const r = await runOutage(
      ctx,
      mesh.plan,
      node,
      subscribersOf(node),
      rng.fork('outage'),
      writes,
      nextKey,
      { readings: outageReadings, oplogMaxEntries, watchUntil: watchEnd.signal },
      restart,
      log,
    );
    outageReport = r.report;
    caughtUp = r.caughtUp;
  });

  const workers = Promise.all([
    runWriter(ctx, rng.fork('writer-1'), writes, nextKey, writeOps),
    runWriter(ctx, rng.fork('writer-2'), writes, nextKey, writeOps),
    runReader(ctx, rng.fork('reader')),
    runCrdtWorker(ctx, rng.fork('crdt'), clients, model, nextKey),
  ]);
  await driver.run(faults, t0);
  const left = durationMs - (performance.now() - t0);
  if (left > 0) await sleep(left); // the rest of the chaos phase: workers keep going on a healthy mesh
  stop.abort();
  const [w1, w2, reads] = await workers;
  const chaosS = (performance.now() - t0) / 1000;

  // a heal that fails is reported with the rest (the summary still shows what the mesh holds)
  const healed = await driver.healAll().catch((err: Error) => {
    driver.errors.push(`heal: ${err.message.split('\n')[0]}`);
    return [] as string[];
  });
  if (healed.length > 0) console.log(`# chaos heal: ${healed.join(', ')}`);

  // converge: poll both checks until clean, with a deadline
  const tc = performance.now();
  let verdict: DataVerdict = verifyData(writes, await readHoldings(mesh.topology), subscribersOf);
  while (!clean(verdict) && performance.now() - tc < CONVERGE_DEADLINE_MS) {
    await sleep(POLL_MS);
    try {
      verdict = verifyData(writes, await readHoldings(mesh.topology), subscribersOf);
    } catch (err) {
      console.log(`# chaos read-back failed (retrying): ${(err as Error).message}`);
    }
  }
  const dataConvergeS = (performance.now() - tc) / 1000;
  // the outage's watch has seen its catch-up by now, or never will
  watchEnd.abort();
  await caughtUp;
  let crdtProblems: string[] = ['not read'];
  let seen: CrdtObservation[] = [];
  const tk = performance.now(); // its own deadline: the data's wait may have used up the first
  while (performance.now() - tk < CONVERGE_DEADLINE_MS) {
    try {
      seen = await readCrdts();
      crdtProblems = verifyCrdts(model, seen);
    } catch (err) {
      crdtProblems = [`read failed: ${(err as Error).message}`];
    }
    if (crdtProblems.length === 0) break;
    await sleep(POLL_MS);
  }
  const crdtConvergeS = (performance.now() - tk) / 1000;

  // after the heal, a mesh-wide aggregate through any node counts every node's own readings once
  const holdings = await readHoldings(mesh.topology);
  const expectedCount = NODES * TINY_ROWS + holdings.reduce((s, h) => s + h.own.length, 0);
  const aggregates: string[] = [];
  for (const n of mesh.topology.nodes) {
    const r = await timedPost(n.function_url, { query: '{ sensorsAggregate { count } }', request_type: 'aggregate', use_meta_data: true }, CLIENT_DEADLINE_MS);
    const count = (r.body?.data?.['sensorsAggregate'] as { count?: number } | undefined)?.count;
    if (r.outcome !== 'ok' || count !== expectedCount) aggregates.push(`${n.id}: ${r.outcome} count ${count}, expected ${expectedCount} (${r.reason ?? ''})`);
  }

  const stats = queryStats(queries, driver.windows);
  // requests that failed while no fault was active anywhere (nor in the 5 s after one healed)
  const quiet = queries.filter((q) => q.outcome !== 'ok' && !driver.windows.some((w) => w.fromMs <= q.startMs + q.durationMs && q.startMs <= w.toMs + 5_000));
  const acked = writes.filter((w) => w.acked);
  const summary = {
    seed,
    chaos_s: Number(chaosS.toFixed(1)),
    faults: countFaults(driver.executed),
    fault_errors: driver.errors.length,
    // processes that exited during their start and were started again, as a supervisor does
    restarted_after_failed_start: driver.restarts.length,
    // the writers' requests by kind (function: insert, update, delete; driver: replace, set), the outage's apart
    writers_sent: Object.fromEntries(Object.keys(w1).map((k) => [k, w1[k as keyof typeof w1] + w2[k as keyof typeof w2]])),
    writes_acknowledged: acked.length,
    writes_uncertain: writes.filter((w) => !w.acked).length,
    updates_answered: queries.filter((q) => q.outcome === 'ok' && ['update', 'db-replace', 'db-set'].includes(q.what)).length,
    deletes_acknowledged: writes.filter((w) => w.deleted).length,
    outage: outageReport ?? null,
    crdt_ops_acknowledged: model.ops,
    crdt_uncertain: { gcounter: model.gcounterUncertain, pncounter: model.pncounterUncertain, orset: model.orsetUncertain.size },
    reads: reads,
    queries: {
      total: queries.length,
      ok: stats.ok,
      failed: stats.failed,
      hung_on_cut_entry: stats.hungCut,
      hung: stats.hung.length,
      failed_outside_faults: quiet.length,
      max_ms: Math.round(stats.maxMs),
      max_ok_ms: Math.round(stats.maxOkMs),
    },
    losses: verdict.losses.length,
    stale: verdict.stale.length,
    duplicates: verdict.duplicates.length,
    resurrected: verdict.resurrected.length,
    orphans: verdict.orphans.length,
    uncertain_writes_held: verdict.uncertainHeld,
    exact_aggregates: NODES - aggregates.length,
    crdt: { gcounter: seen[0]?.gcounter, pncounter: seen[0]?.pncounter, orset_size: seen[0]?.orset.length, problems: crdtProblems.slice(0, 3) },
    converge_s: { data: Number(dataConvergeS.toFixed(1)), crdt: Number(crdtConvergeS.toFixed(1)) },
  };
  console.log(`# chaos summary ${JSON.stringify(summary)}`);
  // every loss with the faults of its origin around it
  for (const st of verdict.stale.slice(0, 5)) console.log(`# chaos stale: ${st}`);
  for (const l of verdict.losses.slice(0, 10)) {
    // "node-O lost its acknowledged reading K (inserted at t=T s)" or "node-S (subscribed to node-O) lacks the replica of K (inserted at t=T s)"
    const m = /^node-(\d+) (?:\(subscribed to node-(\d+)\) )?.*\(inserted at t=([\d.]+) s\)/.exec(l);
    const origin = Number(m?.[2] ?? m?.[1]);
    const at = Number(m?.[3]) * 1000;
    const near = driver.windows.filter((w) => w.node === origin && Number.isFinite(at) && w.fromMs - 10_000 <= at && at <= w.toMs + 10_000);
    console.log(
      `# chaos loss: ${l}; faults of node-${origin} within 10 s: ${near.map((w) => `${w.kind}${w.role ? `:${w.role}` : ''} ${(w.fromMs / 1000).toFixed(1)}-${(w.toMs / 1000).toFixed(1)} s`).join(', ') || 'none'}`,
    );
  }
  const logDir = process.env['CHAOS_LOG_DIR'];
  if (logDir) cpSync(join(mesh.plan.stateDir, 'logs'), logDir, { recursive: true });
  const reportFile = process.env['CHAOS_REPORT_FILE'];
  if (reportFile)
    writeFileSync(
      reportFile,
      JSON.stringify(
        {
          summary,
          plan: faults,
          windows: driver.windows,
          queries,
          verdict,
          crdt: {
            model: { ...model, orsetAdded: [...model.orsetAdded], orsetRemoved: [...model.orsetRemoved], orsetUncertain: [...model.orsetUncertain] },
            seen,
          },
        },
        null,
        1,
      ),
    );
  const errorsByReason = new Map<string, number>();
  for (const q of queries)
    if (q.outcome !== 'ok')
      errorsByReason.set(
        `${q.what} ${q.outcome}: ${(q.reason ?? '').replace(/[0-9a-f]{24}/g, '…').slice(0, 90)}`,
        (errorsByReason.get(`${q.what} ${q.outcome}: ${(q.reason ?? '').replace(/[0-9a-f]{24}/g, '…').slice(0, 90)}`) ?? 0) + 1,
      );
  for (const [r, n] of [...errorsByReason].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`# chaos failed request x${n}: ${r}`);
  for (const r of driver.restarts) console.log(`# chaos restarted after a failed start: ${r}`);

  assert.deepEqual(driver.errors, [], 'every fault was injected and healed');
  assert.ok(acked.length > 0, 'the writer got acknowledgements');
  assert.deepEqual(verdict.losses, [], 'no acknowledged write is missing from its origin or a subscriber');
  assert.deepEqual(verdict.stale, [], 'every replica holds its origin reading as it is now');
  assert.deepEqual(verdict.duplicates, [], 'no reading is held twice');
  assert.deepEqual(verdict.resurrected, [], 'deleted readings stay deleted everywhere');
  assert.deepEqual(verdict.orphans, [], 'no node holds a replica its origin does not hold');
  assert.deepEqual(aggregates, [], 'after the heal, every node answers the exact mesh-wide count');
  assert.deepEqual(crdtProblems, [], 'every agent holds the same CRDT state, equal to the acknowledged ops');
  if (outage) {
    assert.ok(outageReport, 'the outage ran');
    assert.ok(
      outageReport.inserted >= outageReadings,
      `the outage node's database took ${outageReport.inserted} of ${outageReadings} readings while it was down`,
    );
    assert.ok(
      outageReport.oplog_entries_written > oplogMaxEntries,
      `the outage wrote more than the oplog holds (${outageReport.oplog_entries_written} > ${oplogMaxEntries})`,
    );
    assert.ok(outageReport.resyncs >= 1, 'the outage node could not resume behind its oplog, and its listener asked for a resync');
  }
  assert.deepEqual(
    stats.hung.map((q) => `${q.what} via node-${q.node} at ${(q.startMs / 1000).toFixed(1)} s: ${q.reason}`),
    [],
    'no request hung past its deadline',
  );
});

test('mesh chaos - down leaves no namespace or interface behind', { skip }, async () => {
  await down(stateRoot, name);
  assert.deepEqual(await leftovers(name), { netns: [], links: [] });
});
