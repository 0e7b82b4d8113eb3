/**
 * The syncmesh CLI against a real 3-node mesh (scenarios/mesh, bare processes in network
 * namespaces): every verb as a user runs it (bin/syncmesh, a child process) with --json, the output
 * parsed; a node cut off, a wrong mesh secret and a bad mesh file give clear errors and a non-zero
 * exit. Prints the time `status` took. Needs root, make tools and make build (skips otherwise).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from '@syncmesh-edge/log/exit';
import { cut, down, loadConfig, REPO_ROOT, restore, up, type MeshConfig } from '@syncmesh-edge/mesh';
import { generateSensorData } from '@syncmesh-edge/syncmesh-fn/load';
import { waitForEvery } from '@syncmesh-edge/lab';

const LAUNCHER = join(REPO_ROOT, 'bin', 'syncmesh');
const TOXIPROXY_BIN = join(REPO_ROOT, '.cache', 'bin', 'toxiproxy-server');
const skip =
  process.getuid?.() !== 0
    ? 'needs root for the mesh (network namespaces); the CI runs as root'
    : !existsSync(TOXIPROXY_BIN)
      ? 'needs toxiproxy: make tools'
      : !existsSync(join(REPO_ROOT, 'functions', 'syncmesh', 'dist', 'src', 'main.js'))
        ? 'needs make build'
        : false;

const name = `smk${process.pid % 100000}`;
const stateRoot = mkdtempSync(join(tmpdir(), 'cli-test-'));
const work = mkdtempSync(join(tmpdir(), 'cli-test-files-'));
const meshFile = join(stateRoot, name, 'topology.json');
let cfg: MeshConfig;

interface Run {
  code: number;
  json: any;
  stderr: string;
  ms: number;
}

/** bin/syncmesh VERB ... --mesh <the test mesh> --json, parsed. */
function cli(args: string[], opts: { mesh?: string; json?: boolean } = {}): Promise<Run> {
  const argv = [...args, '--mesh', opts.mesh ?? meshFile, ...(opts.json === false ? [] : ['--json'])];
  const t0 = performance.now();
  return new Promise((resolve) => {
    execFile(LAUNCHER, argv, { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      let json: unknown;
      if (opts.json !== false) {
        try {
          json = JSON.parse(stdout);
        } catch {
          assert.fail(`syncmesh ${argv.join(' ')} printed no JSON (exit ${code}):\n${stdout}\n${stderr}`);
        }
      }
      resolve({ code, json: json ?? stdout, stderr, ms: performance.now() - t0 });
    });
  });
}

const localCount = async (node: string): Promise<number> => {
  const r = await cli(['query', 'stats', '--local', '--node', node]);
  assert.equal(r.code, 0, r.stderr);
  return r.json.data.sensorsAggregate.count;
};

before(async () => {
  if (skip) return;
  cfg = loadConfig({ MESH_NAME: name, MESH_NODES: '3', MESH_STATE_DIR: stateRoot, MESH_NODE_TIMEOUT_MS: '8000', MESH_DEADLINE_MS: '16000', TOXIPROXY_BIN });
  await up(cfg);
});

after(async () => {
  if (!skip) await down(stateRoot, name);
  rmSync(stateRoot, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

test("cli - mesh: the emulated mesh's description is read as written, with its listener URLs and logs", { skip }, async () => {
  const r = await cli(['mesh']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.mesh, name);
  assert.deepEqual(
    r.json.nodes.map((n: { id: string }) => n.id),
    ['node-1', 'node-2', 'node-3'],
  );
  for (const n of r.json.nodes) assert.match(n.listener_url, /^http:\/\/10\.\d+\.\d+\.\d+:8091$/);
  assert.equal(r.json.logs_dir, join(stateRoot, name, 'logs'));
  const ids = await cli(['mesh', '--ids'], { json: false });
  assert.equal(ids.json, 'node-1\nnode-2\nnode-3\n');
});

test('cli - status: every node reachable, every service ok, versions, peers, clock; its time printed', { skip }, async () => {
  const times: number[] = [];
  let r!: Run;
  for (let i = 0; i < 3; i++) {
    r = await cli(['status']);
    times.push(r.ms);
  }
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.json.problems, []);
  for (const n of r.json.nodes) {
    assert.equal(n.reachable, true, n.id);
    assert.deepEqual([n.services.function.state, n.services.listener.state, n.services.agent.state, n.services.gateway.state], ['ok', 'ok', 'ok', 'n/a'], n.id);
    assert.equal(n.versions.function, '0.1.0');
    assert.equal(n.versions.listener, '0.1.0');
    assert.equal(n.peers.length, 2);
    assert.ok(Math.abs(n.clock_offset_ms) < 5_000, `${n.id} clock offset ${n.clock_offset_ms} ms (same host)`);
    assert.equal(n.clock_source, 'healthz');
    assert.equal(n.disk_free_bytes, null);
    assert.equal(n.last_error, null);
  }
  console.log(`# status of 3 nodes: ${times.map((t) => `${Math.round(t)} ms`).join(', ')} (the whole process; the CLI's own elapsed_ms ${r.json.elapsed_ms})`);
});

test('cli - nodes, add, remove: signed registry edits on every node, idempotent', { skip }, async () => {
  const all = await cli(['nodes', '--all']);
  assert.equal(all.code, 0, all.stderr);
  for (const reg of all.json.registries) {
    assert.equal(reg.registry.length, 3, reg.node);
    assert.equal(reg.registry.filter((n: { own_node: boolean }) => n.own_node)[0].id, reg.node);
  }
  const add = await cli(['add', 'node-9', '--address', 'http://10.0.0.99:8080/function/syncmesh-fn', '--lat', '42.7', '--lon', '23.3', '--on', 'all']);
  assert.equal(add.code, 0, add.stderr);
  assert.deepEqual(
    add.json.targets.map((t: { node: string; result: string }) => [t.node, t.result]),
    [
      ['node-1', 'added'],
      ['node-2', 'added'],
      ['node-3', 'added'],
    ],
  );
  const again = await cli(['add', 'node-9', '--address', 'http://10.0.0.98:8080/function/syncmesh-fn', '--lat', '42.7', '--lon', '23.3', '--on', '2']);
  assert.deepEqual(
    again.json.targets.map((t: { result: string; entry: { address: string } }) => [t.result, t.entry.address]),
    [['updated', 'http://10.0.0.98:8080/function/syncmesh-fn']],
  );
  const one = await cli(['nodes', '--node', 'node-2']);
  assert.ok(one.json.registry.some((n: { id: string }) => n.id === 'node-9'));
  const removed = await cli(['remove', 'node-9', '--on', 'all']);
  assert.deepEqual(
    removed.json.targets.map((t: { result: string }) => t.result),
    ['removed', 'removed', 'removed'],
  );
  const absent = await cli(['remove', 'node-9', '--on', 'all']);
  assert.equal(absent.code, 0);
  assert.deepEqual(
    absent.json.targets.map((t: { result: string }) => t.result),
    ['absent', 'absent', 'absent'],
  );
});

test("cli - subscribe, unsubscribe: node-2 gets node-1's writes; status shows the outbox drain", { skip }, async () => {
  const sub = await cli(['subscribe', 'node-2', '--to', 'node-1']);
  assert.equal(sub.code, 0, sub.stderr);
  assert.equal(sub.json.targets[0].result, 'subscribed');
  assert.equal(sub.json.targets[0].entry.subscribed, true);
  // the initial sync (node-1's month of readings) is queued, then delivered
  await waitForEvery(
    "node-1's outbox to node-2 drained",
    async () => {
      const s = await cli(['status', 'node-1']);
      const x = s.json.nodes[0].replication.subscribers.find((y: { id: string }) => y.id === 'node-2');
      return x !== undefined && x.outbox_batches === 0 && x.lag_s === 0;
    },
    120_000,
    1_000,
  );
  const unsub = await cli(['unsubscribe', 'node-2', '--from', 'all']);
  assert.equal(unsub.code, 0, unsub.stderr);
  assert.deepEqual(
    unsub.json.targets.map((t: { node: string; result: string }) => [t.node, t.result]),
    [
      ['node-1', 'unsubscribed'],
      ['node-3', 'unsubscribed'],
    ],
  );
});

test('cli - query: collect, aggregate and stats with a trace of who answered, how fast, how much', { skip }, async () => {
  const counts = await Promise.all(['node-1', 'node-2', 'node-3'].map(localCount));
  const stats = await cli(['query', 'stats', '--node', 'node-2']);
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(
    stats.json.data.sensorsAggregate.count,
    counts.reduce((a, b) => a + b, 0),
  );
  assert.deepEqual(stats.json.trace.map((t: { node: string; status: string }) => [t.node, t.status]).sort(), [
    ['node-1', 'ok'],
    ['node-2', 'entry'],
    ['node-3', 'ok'],
  ]);
  for (const t of stats.json.trace) {
    assert.ok(t.ms > 0 && t.bytes > 0 && t.node_ms > 0, JSON.stringify(t));
  }
  assert.equal(stats.json.partial, false);
  const agg = await cli(['query', 'aggregate', '{ sensorsAggregate { count average_temperature } }', '--radius', '1000']);
  assert.equal(agg.json.data.sensorsAggregate.count, stats.json.data.sensorsAggregate.count);
  const collect = await cli(['query', 'collect', '{ sensors(limit: 5) { timestamp temperature } }', '--node', '3']);
  assert.equal(collect.json.data.sensors.length, 5);
  assert.equal(collect.json.trace.length, 3);
  const text = await cli(['query', 'stats', '--local'], { json: false });
  assert.match(text.json, /NODE\s+STATUS\s+TIME\s+BYTES/);
  const bad = await cli(['query', 'collect', '{ sensors { nosuchfield } }']);
  assert.equal(bad.code, 1);
  assert.equal(bad.json.error.code, 'EDGE_CLI_REFUSED');
  assert.equal(bad.json.error.remote_code, 'EDGE_SYNCMESH_GRAPHQL_VALIDATION');
});

test('cli - load: a CSV and JSON lines through the write API; a bad line sends nothing; the listener counts the events', { skip }, async () => {
  const readings = [...generateSensorData(71, { days: 1 })];
  const csv = join(work, 'sensor-71.csv');
  writeFileSync(
    csv,
    `sensor_id,location,lat,lon,timestamp,pressure,temperature,humidity\n${readings
      .map((r) => [r.sensor_id, r.location, r.lat, r.lon, r.timestamp.toISOString(), r.pressure, r.temperature, r.humidity].join(','))
      .join('\n')}\n`,
  );
  const jsonl = join(work, 'sensor-72.jsonl');
  writeFileSync(jsonl, `${[...generateSensorData(72, { days: 1 })].map((r) => JSON.stringify({ ...r, timestamp: r.timestamp.toISOString() })).join('\n')}\n`);
  const before = await localCount('node-3');
  const eventsBefore = (await cli(['status', 'node-3'])).json.nodes[0].listener.events_acknowledged;

  const a = await cli(['load', csv, '--node', 'node-3', '--batch', '250']);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(a.json.loaded, readings.length);
  const b = await cli(['load', jsonl, '--node', 'node-3']);
  assert.equal(b.code, 0, b.stderr);
  const total = readings.length + b.json.loaded;
  assert.equal(await localCount('node-3'), before + total);

  // a bad line: exit 64 (usage: the input named on the command line) with the line, and nothing stored
  const broken = join(work, 'broken.csv');
  writeFileSync(broken, `${readFileSync(csv, 'utf8').split('\n').slice(0, 40).join('\n')}\n71,571,42.6,23.3,not-a-time,93000,20,50\n`);
  const bad = await cli(['load', broken, '--node', 'node-3']);
  assert.equal(bad.code, EXIT.USAGE);
  assert.equal(bad.json.error.code, 'EDGE_CLI_INPUT');
  assert.match(bad.json.error.message, /line 41/);
  assert.equal(await localCount('node-3'), before + total);

  // the listener's metrics count exactly the readings loaded
  await waitForEvery(
    "node-3's listener to acknowledge every loaded reading",
    async () => (await cli(['status', 'node-3'])).json.nodes[0].listener.events_acknowledged === eventsBefore + total,
    60_000,
    500,
  );
});

test('cli - logs: a service of one node, every node, and what a process node does not have', { skip }, async () => {
  const fn = await cli(['logs', 'function', '--node', 'node-1', '--tail', '5']);
  assert.equal(fn.code, 0, fn.stderr);
  assert.equal(fn.json.nodes[0].source, join(stateRoot, name, 'logs', 'node-1.function.log'));
  const all = await cli(['logs', 'listener', '--all']);
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(
    all.json.nodes.map((n: { node: string; lines: unknown[] }) => [n.node, n.lines.length > 0]),
    [
      ['node-1', true],
      ['node-2', true],
      ['node-3', true],
    ],
  );
  const gw = await cli(['logs', 'gateway']);
  assert.equal(gw.code, 1);
  assert.equal(gw.json.nodes[0].error.code, 'EDGE_CLI_NOT_AVAILABLE');
  assert.match(gw.stderr, /EDGE_CLI_NOT_AVAILABLE/);
});

test('cli - errors: a node cut off, a wrong mesh secret, a bad mesh file: clear lines, non-zero exit', { skip }, async () => {
  await cut(stateRoot, name, 'node-3');
  try {
    const t0 = performance.now();
    const s = await cli(['status', '--timeout-ms', '2000']);
    const took = performance.now() - t0;
    assert.equal(s.code, 1);
    assert.deepEqual(
      s.json.nodes.map((n: { id: string; reachable: boolean }) => [n.id, n.reachable]),
      [
        ['node-1', true],
        ['node-2', true],
        ['node-3', false],
      ],
    );
    const lines = s.stderr.trim().split('\n');
    assert.equal(lines.length, 1, s.stderr);
    assert.match(lines[0]!, /^syncmesh: node-3: unreachable \(EDGE_CLI_UNREACHABLE\): function: GET http:\/\/\S+\/healthz: no answer within 2000 ms/);
    console.log(`# status with node-3 cut off (deadline 2000 ms): ${Math.round(took)} ms`);
    const q = await cli(['query', 'stats', '--node', 'node-3', '--timeout-ms', '2000']);
    assert.equal(q.code, 1);
    assert.equal(q.json.error.code, 'EDGE_CLI_UNREACHABLE');
  } finally {
    await restore(stateRoot, name, 'node-3');
  }

  const wrong = join(work, 'wrong-secret');
  writeFileSync(wrong, 'not-the-mesh-secret-0123456789abcdef0123456789', { mode: 0o600 });
  const other = JSON.parse(readFileSync(meshFile, 'utf8'));
  writeFileSync(join(work, 'wrong.json'), JSON.stringify({ ...other, secret_file: wrong }));
  const w = await cli(['subscribe', 'node-3', '--to', 'node-1'], { mesh: join(work, 'wrong.json') });
  assert.equal(w.code, 1);
  assert.equal(w.json.targets[0].result, 'failed');
  assert.equal(w.json.targets[0].error.remote_code, 'EDGE_SYNCMESH_UNAUTHORIZED');
  assert.match(w.stderr, /node-1 refused the registry request \(401 EDGE_SYNCMESH_UNAUTHORIZED\).*what to do: .*mesh secret/);
  const reg = await cli(['nodes', '--node', 'node-1']);
  assert.equal(reg.json.registry.find((n: { id: string }) => n.id === 'node-3').subscribed, false, 'nothing changed');

  writeFileSync(join(work, 'bad.json'), JSON.stringify({ ...other, nodes: [{ ...other.nodes[0], function_url: 'not a url' }] }));
  const bad = await cli(['status'], { mesh: join(work, 'bad.json') });
  assert.equal(bad.code, EXIT.CONFIG);
  assert.equal(bad.json.error.code, 'EDGE_CLI_MESH_FILE');
  assert.match(bad.json.error.message, /nodes\.0\.function_url: an http\(s\) URL/);
});
