import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './config.js';
import { ScenarioError } from './errors.js';
import { captureNetnsOf, healthUrl, inspectExistingMesh, readTopology, type ExistingTopology } from './existing.js';

/** A Terraform-style topology (VMs on a bridge in libvirt's namespace, peers reached directly). */
function vmTopology(n = 3): ExistingTopology & Record<string, unknown> {
  const addr = (i: number) => `10.61.0.${10 + i}`;
  const url = (i: number) => `http://${addr(i)}:8080/function/syncmesh-fn`;
  return {
    runtime: 'faasd',
    mesh: 'smt3',
    isolation: 'vm',
    subnet: '10.61.0.0/24',
    host_address: '10.61.0.2',
    latency: 'none',
    nodes: Array.from({ length: n }, (_, k) => {
      const i = k + 1;
      const peers: Record<string, string> = {};
      for (let j = 1; j <= n; j++) if (j !== i) peers[`node-${j}`] = url(j);
      return {
        id: `node-${i}`,
        address: addr(i),
        function_url: url(i),
        agent_address: `${addr(i)}:7070`,
        mongodb_uri: null,
        namespace: 'smt-lv',
        host_interface: `smt3-t${i}`,
        peers,
      };
    }),
  };
}

/** Calls `f` with the path of a topology.json holding `content`, removed after `f` (and its promise) settles. */
async function withFile(content: string, f: (path: string) => unknown): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'measure-topology-'));
  try {
    const path = join(dir, 'topology.json');
    writeFileSync(path, content);
    await f(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const topologyError = (re: RegExp) => (e: unknown) => e instanceof ScenarioError && e.code === 'EDGE_SCENARIO_TOPOLOGY' && re.test(e.message);

test("existing mesh - a Terraform topology is read; the VMs' namespace holds the capture", async () => {
  let t = vmTopology();
  await withFile(JSON.stringify(t), (p) => {
    t = readTopology(p);
  });
  assert.equal(t.nodes.length, 3);
  assert.equal(captureNetnsOf(t, undefined, 'p'), 'smt-lv');
  assert.equal(captureNetnsOf({ ...t, libvirt_netns: 'other-lv' }, undefined, 'p'), 'other-lv');
  assert.equal(captureNetnsOf(t, null, 'p'), null, 'SCENARIO_CAPTURE_NETNS=host wins');
  assert.equal(captureNetnsOf({ ...t, isolation: 'netns' }, undefined, 'p'), null, "an emulated mesh's links are on the host");
  const mixed = { ...t, nodes: t.nodes.map((n, i) => ({ ...n, namespace: i === 0 ? null : n.namespace })) };
  assert.throws(() => captureNetnsOf(mixed, undefined, 'p'), topologyError(/SCENARIO_CAPTURE_NETNS/));
});

test('existing mesh - a missing, broken or incomplete topology fails naming what is wrong', async () => {
  assert.throws(() => readTopology('/nonexistent/topology.json'), topologyError(/no such file.*make tf-up/));
  await withFile('{', (p) => assert.throws(() => readTopology(p), topologyError(/not JSON/)));
  const { subnet: _subnet, ...noSubnet } = vmTopology();
  await withFile(JSON.stringify(noSubnet), (p) => assert.throws(() => readTopology(p), topologyError(/subnet/)));
  await withFile(JSON.stringify({ ...vmTopology(), isolation: 'loopback' }), (p) =>
    assert.throws(() => readTopology(p), topologyError(/isolation.*cannot be told apart/)),
  );
  const t = vmTopology();
  t.nodes[0]!.peers = { 'node-2': t.nodes[1]!.function_url };
  await withFile(JSON.stringify(t), (p) => assert.throws(() => readTopology(p), topologyError(/no peer URL for node-3/)));
});

test('existing mesh - NODES or LATENCY that disagree with the topology fail before anything is touched', async () => {
  await withFile(JSON.stringify(vmTopology()), async (p) => {
    await assert.rejects(
      inspectExistingMesh(loadConfig({ SCENARIO_TOPOLOGY: p, SCENARIO_NODES: '5' })),
      (e: unknown) => e instanceof ScenarioError && e.code === 'EDGE_SCENARIO_CONFIG' && /NODES=5/.test(e.message) && /has 3 nodes/.test(e.message),
    );
    await assert.rejects(
      inspectExistingMesh(loadConfig({ SCENARIO_TOPOLOGY: p, SCENARIO_LATENCY: 'regional' })),
      (e: unknown) => e instanceof ScenarioError && e.code === 'EDGE_SCENARIO_CONFIG' && /LATENCY=regional/.test(e.message),
    );
  });
});

test("existing mesh - the health URL is k6's: the function's origin + /healthz", () => {
  assert.equal(healthUrl('http://10.61.0.11:8080/function/syncmesh-fn'), 'http://10.61.0.11:8080/healthz');
});
