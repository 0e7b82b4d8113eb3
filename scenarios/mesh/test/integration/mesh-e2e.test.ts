/**
 * A 3-node mesh end to end with the real Syncmesh function, in network namespaces: the mesh-wide
 * aggregate equals the value computed directly from the same data, the original Syncmesh
 * client's bodies naming the function_urls mesh-up prints are answered exactly through every
 * node (its registry holds its peers at those URLs), a cut-off node shows up as
 * failed within the node timeout and is included again after it is restored, and mesh-down
 * leaves nothing behind. Data: MESH_TEST_DATA, else ../shared/data/sofia when present, else generated.
 * Needs root, toxiproxy and iptables (make tools) and a built function (make build).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, REPO_ROOT, type MeshConfig } from '../../src/config.js';
import { postFunction } from '../../src/client/client.js';
import { cut, down, restore, status, up, type MeshHandle } from '../../src/mesh.js';
import { expectedOf, type ExpectedAggregate } from '../../src/client/oracle.js';
import { aggregateRequest, DEFAULT_RADIUS_KM, MONTH_END, MONTH_START } from '../../src/client/queries.js';
import { iptablesRules, netnsSkipReason, recordedProcesses, stillRunning, tempStateRoot, uniqueMeshName } from '../../src/testing/helpers.js';
import { leftovers } from '@syncmesh-edge/lab';
import { assertOriginalBodiesExact } from '../../src/testing/original-bodies.js';
import { aggregateOf, assertEqualAggregate, testMeshEnv } from './support.js';

const NODE_TIMEOUT_MS = 8_000; // generous: the test server is slow on a busy 2-core machine
const DEADLINE_MS = 16_000;
const functionMain = join(REPO_ROOT, 'functions', 'syncmesh', 'dist', 'src', 'main.js');
const skip = netnsSkipReason({ functionMain });

const name = uniqueMeshName('sme');
const stateRoot = tempStateRoot();
let cfg: MeshConfig;
let mesh: MeshHandle;
let rulesBefore = '';

/** The truth over some nodes' data (1-based), or over all of them. */
const source = () => ({ dataDir: cfg.dataDir, uris: mesh.topology.nodes.map((n) => n.mongodb_uri) });
const expected = (nodes: number[]): Promise<ExpectedAggregate> => expectedOf(source(), MONTH_START, MONTH_END, nodes);

const query = () =>
  postFunction(mesh.topology.nodes[0]!.function_url, aggregateRequest(MONTH_START, MONTH_END, { radius: DEFAULT_RADIUS_KM }), {
    timeoutMs: DEADLINE_MS + 10_000,
  });

before(async () => {
  if (skip) return;
  rulesBefore = iptablesRules();
  cfg = loadConfig(testMeshEnv({ name, stateRoot, nodeTimeoutMs: NODE_TIMEOUT_MS, deadlineMs: DEADLINE_MS }));
  mesh = await up(cfg);
  // the first query on a fresh JVM is slow (JIT): warm every node's database once, alone
  await Promise.all(
    mesh.topology.nodes.map((n) => postFunction(n.function_url, aggregateRequest(MONTH_START, MONTH_END, { useMetaData: false }), { timeoutMs: 120_000 })),
  );
});

after(async () => {
  if (skip) return;
  await down(stateRoot, name);
  rmSync(stateRoot, { recursive: true, force: true });
});

test('mesh e2e - the topology lists every node with its namespace, location and reachable URLs', { skip }, async () => {
  assert.equal(mesh.topology.nodes.length, 3);
  for (const n of mesh.topology.nodes) {
    assert.equal(n.namespace, `${name}-n${n.id.slice(5)}`);
    assert.equal(typeof n.lat, 'number');
    assert.equal(typeof n.lon, 'number');
    assert.equal(Object.keys(n.peers).length, 2);
  }
  const s = await status(stateRoot, name);
  assert.deepEqual(
    s.nodes.map((n) => n.ready),
    [true, true, true],
  );
});

test('mesh e2e - the mesh-wide aggregate equals the value computed directly from the data', { skip }, async () => {
  const a = await query();
  assert.equal(a.answer.extensions?.['answered'], 3, JSON.stringify(a.answer.extensions));
  assert.equal(a.answer.extensions?.partial, false);
  assertEqualAggregate(aggregateOf(a), await expected([1, 2, 3]));
});

test("mesh e2e - the original client's bodies naming the function_urls mesh-up prints are answered exactly through every node", { skip }, async () => {
  const lines = await assertOriginalBodiesExact(mesh.topology, mesh.secret, (start, end) => expectedOf(source(), start, end), DEADLINE_MS + 10_000);
  for (const l of lines) console.log(`# original bodies (process runtime): ${l}`);
});

test('mesh e2e - a cut-off node is reported failed within the timeout, and included again once restored', { skip }, async () => {
  await cut(stateRoot, name, 'node-3');
  try {
    const a = await query();
    const n3 = a.answer.extensions?.nodes?.find((n) => n.node === 'node-3');
    assert.ok(n3, `node-3 in extensions.nodes: ${JSON.stringify(a.answer.extensions)}`);
    assert.match(n3.status, /^(timeout|failed)$/);
    assert.ok((n3.ms ?? Infinity) <= NODE_TIMEOUT_MS + 1_000, `node-3 reported after ${n3.ms} ms, timeout ${NODE_TIMEOUT_MS}`);
    assert.equal(a.answer.extensions?.partial, true);
    assertEqualAggregate(aggregateOf(a), await expected([1, 2]));
  } finally {
    await restore(stateRoot, name, 'node-3');
  }
  const b = await query();
  assert.equal(b.answer.extensions?.['answered'], 3, JSON.stringify(b.answer.extensions));
  assertEqualAggregate(aggregateOf(b), await expected([1, 2, 3]));
});

test('mesh e2e - mesh-down leaves no process, namespace, interface or iptables rule', { skip }, async () => {
  const procs = recordedProcesses(join(stateRoot, name));
  await down(stateRoot, name);
  assert.deepEqual(stillRunning(procs), []);
  assert.deepEqual(await leftovers(name), { netns: [], links: [] });
  assert.equal(iptablesRules(), rulesBefore);
});
