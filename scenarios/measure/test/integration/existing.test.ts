/**
 * A cell on an EXISTING mesh, the path `make scenario TARGET=terraform` takes (needs root,
 * tcpdump, k6 and the plot venv): a 3-node emulated mesh started here with the mesh package,
 * then measured from its topology.json alone (SCENARIO_TOPOLOGY): no mesh up or down by the
 * scenario, the client namespace plugged into the bridge that holds the nodes' links, tcpdump
 * on those links, addresses classified from the topology. Checks the counts against the pcaps,
 * the report and plots, that bad configurations fail before any measurement (a node cut off, a
 * link that is not there), and that the scenario leaves the mesh as it found it.
 *
 * Runs with MEASURE_TEST_EXISTING=1 only (`make test-scenario-existing`; 51 s at load 5-10, 107 s at load
 * 12). Names start with MEASURE_TEST_PREFIX (default smx) and the pid.
 */
import { hostInfo } from '@syncmesh-edge/bench-kit';
import { leftovers } from '@syncmesh-edge/lab';
import { cut, down as meshDown, loadConfig as loadMeshConfig, restore, up as meshUp } from '@syncmesh-edge/mesh';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { ScenarioError } from '../../src/errors.js';
import { inspectExistingMesh } from '../../src/existing.js';
import { writeResults } from '../../src/report.js';
import { runOnExistingMesh } from '../../src/run.js';
import { assertCountsFromPcaps, assertPngs, missing, processesMentioning, testMeshName } from './support.js';

/** About 2 min here (mesh start, two cells, a 10 s probe timeout): past make test's budget, so its own tier. */
const skip = process.env['MEASURE_TEST_EXISTING'] !== '1' ? 'set MEASURE_TEST_EXISTING=1 (make test-scenario-existing): about 2 min' : missing();
const mesh = testMeshName('smx');
const root = mkdtempSync(join(tmpdir(), `${mesh}-existing-`));
const stateDir = join(root, 'state');
const topologyPath = join(stateDir, mesh, 'topology.json');
/** The mesh start dominates (a few seconds per node), and other work shares the 2 cores. */
const MESH_TIMEOUT_MS = 4 * 60_000;
const CELL_TIMEOUT_MS = 4 * 60_000;
const cell = { system: 'syncmesh' as const, nodes: 3, workload: 'aggregate' as const, days: 1, requests: 5 };

function scenarioConfig(extra: Record<string, string> = {}) {
  return loadConfig({ SCENARIO_TOPOLOGY: topologyPath, SCENARIO_RESULTS_DIR: join(root, 'results'), SCENARIO_WARMUP: '1', ...extra });
}

before(
  async () => {
    if (skip) return;
    const meshCfg = loadMeshConfig({
      PATH: process.env['PATH'],
      MESH_NAME: mesh,
      MESH_NODES: '3',
      MESH_LATENCY: 'site',
      MESH_STATE_DIR: stateDir,
      MESH_ISOLATION: 'netns',
      TOXIPROXY_BIN: loadConfig({}).toxiproxyBin,
    });
    await meshUp(meshCfg);
  },
  { timeout: MESH_TIMEOUT_MS },
);

after(async () => {
  if (!skip) await meshDown(stateDir, mesh);
  rmSync(root, { recursive: true, force: true });
});

test('existing mesh - one syncmesh cell from the topology alone: counts from the node links, report, plots; the mesh is left as it was', {
  skip,
  timeout: CELL_TIMEOUT_MS,
}, async () => {
  const cfg = scenarioConfig();
  const existing = await inspectExistingMesh(cfg);
  assert.equal(existing.netns, null, "the emulated mesh's links are on the host");
  assert.equal(existing.bridge, `${mesh}-br`, 'the bridge is found from the links');
  assert.equal(existing.nodes.length, 3);
  const namespacesBefore = (await leftovers(mesh)).netns;
  const runDir = join(cfg.resultsDir, 'links');
  const results = await runOnExistingMesh(cfg, existing, [cell], runDir, () => undefined);
  const { plots } = writeResults(
    cfg,
    runDir,
    {
      run: 'links',
      started_at: '',
      finished_at: '',
      latency: existing.latency,
      target: `existing mesh \`${mesh}\` (${existing.description})`,
      host: { ...hostInfo(), note: 'test' },
      duration_s: 0,
    },
    results,
  );

  assert.equal(results.length, 1);
  const r = results[0]!;
  const q = r.traffic.query;
  assert.equal(q.source, 'pcap');
  assert.equal(q.pcap_files.length, 4, 'the client link and the three node links');
  assertCountsFromPcaps(q, r.id);
  assert.equal(r.latency, 'site', "the mesh's own link profile");
  assert.equal(r.thresholds_ok, true, `k6 thresholds (see ${r.files.k6_log})`);
  assert.equal(r.nodes_answered, 3);
  assert.ok(q.client_bytes > 0, "the client's queries were captured");
  assert.deepEqual(
    q.pairs.map((p) => `${p.from}>${p.to}`),
    ['node-1>node-2', 'node-1>node-3'],
    'node-1 asked its peers over their links',
  );
  assert.ok(q.relay_bytes > 0, "the link proxies' second legs are seen and not counted");
  assert.equal(r.traffic.total_bytes, q.counted_bytes);
  assert.ok(
    r.resources.query.roles.some((x) => x.role === 'node-function'),
    "the mesh's processes were sampled from its state",
  );

  assertPngs(runDir, plots);
  assert.deepEqual(plots, ['traffic.png', 'rtt.png']);
  assert.match(readFileSync(join(runDir, 'report.md'), 'utf8'), new RegExp(`existing mesh \`${mesh}\``));
  assert.equal(readFileSync(join(runDir, 'results.csv'), 'utf8').trim().split('\n').length, 2);

  assert.deepEqual((await leftovers(mesh)).netns, namespacesBefore, "the mesh's namespaces are untouched and the client's is gone");
  assert.ok(!(await leftovers(mesh)).links.includes(`${mesh}-clh`), "the client's link is gone");
  assert.deepEqual(processesMentioning(`${mesh}-cl`, 'tcpdump -i'), [], 'no tcpdump or k6 left');
});

test('existing mesh - the bridge alone captured: the same classes, every packet once', { skip, timeout: CELL_TIMEOUT_MS }, async () => {
  const cfg = scenarioConfig({ SCENARIO_CAPTURE: 'bridge', SCENARIO_WARMUP: '0' });
  const existing = await inspectExistingMesh(cfg);
  const [r] = await runOnExistingMesh(cfg, existing, [cell], join(cfg.resultsDir, 'bridge'), () => undefined);
  const q = r!.traffic.query;
  assert.deepEqual(
    q.interfaces.map((i) => i.iface),
    [`${mesh}-br`],
  );
  assertCountsFromPcaps(q, 'bridge');
  const seen = q.interfaces[0]!.bytes;
  assert.equal(q.client_bytes + q.node_node_bytes + q.node_central_bytes + q.agent_bytes + q.mongo_bytes + q.relay_bytes + q.other_bytes, seen);
  assert.ok(q.client_bytes > 0);
  assert.deepEqual(
    q.pairs.map((p) => `${p.from}>${p.to}`),
    ['node-1>node-2', 'node-1>node-3'],
  );
});

test('existing mesh - a node that does not answer, or a link that is not there, fails before any measurement', {
  skip,
  timeout: CELL_TIMEOUT_MS,
}, async () => {
  const cfg = scenarioConfig();
  const runDir = join(cfg.resultsDir, 'unreachable');
  await cut(stateDir, mesh, 'node-3');
  try {
    const existing = await inspectExistingMesh(cfg);
    await assert.rejects(
      runOnExistingMesh(cfg, existing, [cell], runDir, () => undefined),
      (e: unknown) => e instanceof ScenarioError && e.code === 'EDGE_SCENARIO_UNREACHABLE' && /healthz/.test(e.message),
    );
  } finally {
    await restore(stateDir, mesh, 'node-3');
  }
  const cellDir = join(runDir, 'nodes-3');
  assert.deepEqual(existsSync(cellDir) ? readdirSync(cellDir) : [], [], 'nothing was measured');
  assert.ok(!(await leftovers(mesh)).netns.includes(`${mesh}-cl`), 'the client namespace is removed again');

  const broken = JSON.parse(readFileSync(topologyPath, 'utf8')) as { nodes: { host_interface: string }[] };
  broken.nodes[1]!.host_interface = `${mesh}-h9`;
  const brokenPath = join(root, 'broken-topology.json');
  writeFileSync(brokenPath, JSON.stringify(broken));
  await assert.rejects(
    inspectExistingMesh(loadConfig({ SCENARIO_TOPOLOGY: brokenPath })),
    (e: unknown) =>
      e instanceof ScenarioError && e.code === 'EDGE_SCENARIO_TOPOLOGY' && e.message.includes(`node-2's link ${mesh}-h9 is not in the host's namespace`),
  );
});
