/**
 * The appliance VM image's mesh (images/appliance/test/test-vm.sh boots it under QEMU and writes
 * its topology.json in the local mesh's format): the same exact checks as the faasd mesh —
 * aggregate and collect through every node's gateway against the value computed from the data —
 * plus the gateway's API, the health URL and the node with a bad node file (it says why, does
 * not join, stays reachable by SSH).
 *
 * Tier `make test-appliance` (sets APPLIANCE_TOPOLOGY, APPLIANCE_BAD_NODE, APPLIANCE_SSH_KEY).
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { postFunction, type TimedAnswer } from '../../src/client/client.js';
import { expectedFromMongo, expectedOf, warmAggregate, type ExpectedAggregate } from '../../src/client/oracle.js';
import { aggregateOf, assertEqualAggregate } from './support.js';
import { aggregateRequest, collectRequest, DAY_END, DEFAULT_RADIUS_KM, MONTH_END, MONTH_START, WEEK_END } from '../../src/client/queries.js';
import { GatewayClient } from '../../src/runtime/faasd.js';
import type { Topology } from '../../src/plan/topology.js';

const TIMEOUT_MS = 120_000;
const WARM_MS = 10_000;
const WARM_TRIES = 4;
const DEADLINE_TRIES = 3;
const topologyFile = process.env['APPLIANCE_TOPOLOGY'] ?? '';
const badNode = process.env['APPLIANCE_BAD_NODE'] ?? '';
const sshKey = process.env['APPLIANCE_SSH_KEY'] ?? '';
const serialLogs = process.env['APPLIANCE_SERIAL_LOGS'] ?? '';
const dataDir = process.env['MESH_TEST_DATA'] ?? '';
// the aggregate's time window: the month (default), its first week or its first day
// (MESH_TEST_WINDOW=week|day). Under software emulation three VMs scanning a month at once took
// 20 to more than 45 s each: past the longest peer deadline the gateway's 60 s allows.
const WINDOW_ENDS = { month: MONTH_END, week: WEEK_END, day: DAY_END } as const;
const windowName = (process.env['MESH_TEST_WINDOW'] ?? 'month') as keyof typeof WINDOW_ENDS;
if (!(windowName in WINDOW_ENDS)) throw new Error(`MESH_TEST_WINDOW must be month, week or day, not '${windowName}'`);
const window = { start: MONTH_START, end: WINDOW_ENDS[windowName] };
const skip = topologyFile && existsSync(topologyFile) ? false : 'appliance tier: run make test-appliance (boots the VMs, sets APPLIANCE_TOPOLOGY)';
const topo: Topology = skip ? ({ nodes: [] } as unknown as Topology) : (JSON.parse(readFileSync(topologyFile, 'utf8')) as Topology);

before(async () => {
  if (skip) return;
  // the first query on a fresh JVM (the test server) is slow, slower still under TCG: warm every
  // node's database directly, one at a time, as the faasd tier does
  for (const n of topo.nodes) await expectedFromMongo([n.mongodb_uri], MONTH_START, MONTH_END);
  // ... and its aggregation pipeline, which the reads above do not touch: session 9's first
  // aggregate through node-1 of a freshly loaded local-3 hit the function's 50 s deadline
  // (CI's run on stop 34 measured 56 s for node-1's first one, then hit the deadline through the
  // gateway): repeated until one takes under WARM_MS, at most WARM_TRIES times
  for (const n of topo.nodes) {
    for (let i = 1; i <= WARM_TRIES; i++) {
      const ms = await warmAggregate(n.mongodb_uri, window.start, window.end);
      process.stderr.write(`[appliance] ${n.id}: $match + $group number ${i} in its database took ${ms} ms\n`);
      if (ms < WARM_MS) break;
    }
  }
});

/**
 * POST to a node's function; an answer that is the function's own deadline (504,
 * EDGE_SYNCMESH_DEADLINE_EXCEEDED) or says it is partial (a peer's deadline), as three emulated VMs
 * aggregating at once on a 2-core host can give, is asked again, at most DEADLINE_TRIES times, and each such answer is printed. The answer that is
 * checked is always a complete one: exactness is what these tests assert, not speed (that is
 * make bench-*'s job).
 */
async function askAnswered(n: Topology['nodes'][number], body: unknown): Promise<TimedAnswer> {
  for (let i = 1; ; i++) {
    const a = await postFunction(n.function_url, body, { timeoutMs: TIMEOUT_MS });
    const deadline = a.status === 504 && (a.answer.errors ?? []).some((e) => e.extensions?.['code'] === 'EDGE_SYNCMESH_DEADLINE_EXCEEDED');
    const partial = a.answer.extensions?.partial === true;
    if (!(deadline || partial) || i === DEADLINE_TRIES) return a;
    const why = deadline ? "the function's deadline" : `a partial answer (${JSON.stringify(a.answer.extensions?.nodes ?? []).slice(0, 500)})`;
    process.stderr.write(`[appliance] ${n.id}: attempt ${i} got ${why} after ${Math.round(a.rttMs)} ms; asking again\n`);
  }
}

function expected(start: string, end: string): Promise<ExpectedAggregate> {
  return expectedOf({ dataDir, uris: topo.nodes.map((n) => n.mongodb_uri) }, start, end);
}

async function health(host: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://${host}:8099/health`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function ssh(host: string, command: string): string {
  return execFileSync(
    'ssh',
    [
      '-i',
      sshKey,
      '-o',
      'BatchMode=yes',
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'LogLevel=ERROR',
      `root@${host}`,
      command,
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
}

test('appliance mesh - the topology has the faasd runtime, each gateway and its basic-auth file', { skip }, () => {
  assert.equal(topo.runtime, 'faasd');
  assert.ok(topo.nodes.length >= 3, `${topo.nodes.length} nodes (a mesh has 3 to 30)`);
  for (const n of topo.nodes) {
    assert.equal(n.gateway_url, `http://${n.address}:8080`);
    assert.equal(n.function_url, `${n.gateway_url}/function/syncmesh-fn`);
    assert.match(readFileSync(n.basic_auth_file!, 'utf8'), /^admin:[A-Za-z0-9]{20,}$/);
  }
});

/**
 * The health URL until it answers 200 (every part healthy), for at most `ms`. Under software
 * emulation a part's probe sometimes outlasts the checker's timeout (the appliance's is 5 s; the URL
 * then honestly answers 503 naming it); a later check passes again.
 */
async function healthyWithin(host: string, ms: number): Promise<{ status: number; body: Record<string, unknown> }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const h = await health(host);
    if (h.status === 200 || Date.now() > deadline) return h;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
}

test('appliance mesh - each node is ready at its health URL and says it runs the test server, not MongoDB', { skip }, async () => {
  for (const n of topo.nodes) {
    const h = await healthyWithin(n.address, 60_000);
    // every part is checked and listed; under software emulation a part may still be failing its
    // probe (503 naming it: said here, not a failure of this tier; the lab tier tests the 503s)
    assert.deepEqual(
      (h.body['parts'] as Array<{ name: string }>).map((p) => p.name).sort(),
      ['agent', 'database', 'function', 'gateway', 'listener', 'registry'],
      JSON.stringify(h.body),
    );
    if (h.status !== 200) console.log(`# [appliance] ${n.id}: health ${h.status}, failing ${JSON.stringify(h.body['failing'])} after 60 s`);
    assert.equal(h.body['state'], 'ready');
    assert.equal(h.body['node_id'], n.id);
    assert.deepEqual(
      Object.values(h.body['peers'] as Record<string, string>),
      topo.nodes.slice(1).map(() => 'registered'),
      `${n.id} peers ${JSON.stringify(h.body['peers'])}`,
    );
    const db = h.body['database'] as { kind: string; warning: string };
    assert.equal(db.kind, 'test-server');
    assert.match(db.warning, /TEST-ONLY/);
  }
});

test("appliance mesh - /system/info reports faasd 0.19.0 and gateway 0.27.5; /system needs the node's basic auth", { skip }, async () => {
  for (const n of topo.nodes) {
    const gw = new GatewayClient(n.gateway_url!, readFileSync(n.basic_auth_file!, 'utf8').trim());
    const info = await gw.info();
    assert.equal(info.provider.provider, 'faasd');
    assert.equal(info.provider.version.release, '0.19.0');
    assert.equal(info.version.release, '0.27.5');
    const fn = (await gw.functions()).find((f) => f.name === 'syncmesh-fn');
    assert.ok(fn, 'syncmesh-fn deployed');
    assert.deepEqual(fn.secrets, ['mesh-secret', 'write-key', 'mongodb-uri']);
    assert.equal((await fetch(`${n.gateway_url}/system/functions`)).status, 401);
  }
});

test("appliance mesh - the aggregate through each node's gateway equals the value computed from the data", { skip, timeout: 600_000 }, async () => {
  const want = await expected(window.start, window.end);
  assert.ok(want.count > 0, 'data loaded');
  for (const n of topo.nodes) {
    const a = await askAnswered(n, aggregateRequest(window.start, window.end, { radius: DEFAULT_RADIUS_KM }));
    // the whole answer on failure (an error answer has no extensions), with its status and time
    const said = () => `${n.id}: HTTP ${a.status} after ${Math.round(a.rttMs)} ms: ${JSON.stringify(a.answer).slice(0, 2000)}`;
    assert.equal(a.answer.extensions?.['answered'], topo.nodes.length, said());
    assertEqualAggregate(aggregateOf(a), want, n.id);
  }
});

test("appliance mesh - a collect through each node's gateway returns every reading of the day", { skip, timeout: 600_000 }, async () => {
  const want = await expected(MONTH_START, DAY_END);
  for (const n of topo.nodes) {
    const a = await askAnswered(n, collectRequest(MONTH_START, DAY_END, { radius: DEFAULT_RADIUS_KM }));
    assert.deepEqual(a.answer.errors ?? [], [], `${n.id}: HTTP ${a.status} after ${Math.round(a.rttMs)} ms: ${JSON.stringify(a.answer).slice(0, 2000)}`);
    const rows = a.answer.data!['sensors'] as { _id: string }[];
    assert.equal(rows.length, want.count, `${n.id}: ${rows.length} readings, the data has ${want.count}`);
    assert.equal(new Set(rows.map((r) => `${r._id}`)).size, rows.length, 'no reading twice');
  }
});

const skipBad = skip || (badNode ? false : 'no node with a bad node file in this run (APPLIANCE_BAD_NODE unset)');
test('appliance bad node file - the node says why at its health URL and on its console, does not join, stays reachable by SSH', { skip: skipBad }, async () => {
  const h = await health(badNode);
  assert.equal(h.status, 503);
  assert.equal(h.body['state'], 'invalid-node-file');
  const problems = (h.body['problems'] as string[]).join('\n');
  assert.match(problems, /^lat: missing/m);
  assert.match(problems, /^mesh_secret: too short \(9 bytes; at least 32/m);
  const consoleLog = readFileSync(join(serialLogs, readdirSync(serialLogs).find((f) => f.endsWith('vm4.serial.log'))!), 'utf8');
  assert.match(consoleLog, /EDGE_APPLIANCE_NODE_FILE/);
  assert.match(consoleLog, /lat: missing/);
  // reachable by SSH (the key from its node file), and no faasd, no gateway
  assert.equal(ssh(badNode, 'hostname').trim(), 'node-bad');
  assert.equal(ssh(badNode, 'systemctl is-active faasd.service || true').trim(), 'inactive');
  assert.match(ssh(badNode, 'journalctl -u syncmesh-configure -b --no-pager'), /EDGE_APPLIANCE_NODE_FILE: .*lat: missing/);
  await assert.rejects(fetch(`http://${badNode}:8080/healthz`, { signal: AbortSignal.timeout(5_000) }));
});
