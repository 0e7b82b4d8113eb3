import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '@syncmesh-edge/log/exit';
import { CliError } from './errors.js';
import { findNode, findNodes, meshJsonSchema, readMesh } from './mesh-file.js';

const repo = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const dir = mkdtempSync(join(tmpdir(), 'syncmesh-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A description as scenarios/mesh writes it (process runtime, netns). */
export const PROCESS_MESH = {
  mesh: 'sme0',
  isolation: 'netns',
  subnet: '10.9.1.0/24',
  host_address: '10.9.1.1',
  latency: 'none',
  forward_mode: 'parallel',
  toxiproxy_api: 'http://10.9.1.1:8474',
  secret_file: 'secret',
  write_key_file: 'write-key',
  created_at: '2026-11-28T00:00:00.000Z',
  logs_dir: 'logs',
  nodes: [1, 2].map((i) => ({
    id: `node-${i}`,
    function_url: `http://10.9.1.1${i}:8080/function/syncmesh-fn`,
    mongodb_uri: `mongodb://10.9.1.1${i}:27017/?directConnection=true`,
    agent_address: `10.9.1.1${i}:7070`,
    lat: 42.6,
    lon: 23.3,
    namespace: `sme0-n${i}`,
    address: `10.9.1.1${i}`,
    host_interface: `sme0-h${i}`,
    peers: { [`node-${3 - i}`]: `http://10.9.1.1:2010${3 - i}/function/syncmesh-fn` },
    agent_peers: { [`node-${3 - i}`]: `10.9.1.1:2510${3 - i}` },
    listener_url: `http://10.9.1.1${i}:8091`,
    some_future_field: true,
  })),
};

function write(name: string, value: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof value === 'string' ? value : JSON.stringify(value));
  return p;
}

function rejects(file: string, pattern: RegExp): void {
  assert.throws(
    () => readMesh(file),
    (e: unknown) =>
      e instanceof CliError && e.code === 'EDGE_CLI_MESH_FILE' && e.exitCode === EXIT.CONFIG && pattern.test(e.message) && typeof e.hint === 'string',
  );
}

test("mesh file - the emulated mesh's description reads, relative paths from its folder, unknown fields kept", () => {
  const mesh = readMesh(write('process.json', PROCESS_MESH));
  assert.equal(mesh.nodes.length, 2);
  assert.equal(mesh.secret_file, join(dir, 'secret'));
  assert.equal(mesh.logs_dir, join(dir, 'logs'));
  assert.equal((mesh.nodes[0] as Record<string, unknown>)['some_future_field'], true);
  assert.equal(findNode(mesh, 'node-2').id, 'node-2');
  assert.equal(findNode(mesh, '1').id, 'node-1');
  assert.deepEqual(
    findNodes(mesh, 'node-2,1', 'all').map((n) => n.id),
    ['node-1', 'node-2'],
  );
  assert.throws(
    () => findNode(mesh, 'node-9'),
    (e: unknown) => e instanceof CliError && e.code === 'EDGE_CLI_UNKNOWN_NODE' && /node-1, node-2/.test(e.hint ?? ''),
  );
});

test('mesh file - what is wrong is named: no file, not JSON, missing and bad fields, a node twice', () => {
  rejects(join(dir, 'nope.json'), /no such file/);
  rejects(write('broken.json', '{"mesh": '), /not JSON/);
  rejects(write('empty.json', {}), /mesh: Invalid input: expected string/);
  rejects(
    write('badurl.json', { ...PROCESS_MESH, nodes: [{ ...PROCESS_MESH.nodes[0], function_url: 'ftp://x' }] }),
    /nodes\.0\.function_url: an http\(s\) URL/,
  );
  rejects(write('twice.json', { ...PROCESS_MESH, nodes: [PROCESS_MESH.nodes[0], PROCESS_MESH.nodes[0]] }), /appears twice/);
  rejects(write('isolation.json', { ...PROCESS_MESH, isolation: 'vlan' }), /isolation/);
});

test('mesh file - what Ansible writes (ansible/lab/topology.py) is the same format', () => {
  const out = join(dir, 'ansible-topology.json');
  // the faasd role kept node-1's registry credentials on the controller; node-2 was not provisioned yet
  mkdirSync(join(dir, '.secrets/registry-auth'), { recursive: true });
  writeFileSync(join(dir, '.secrets/registry-auth/node-1'), 'syncmesh:p', { mode: 0o600 });
  execFileSync('python3', [
    join(repo, 'ansible/lab/topology.py'),
    join(repo, 'cli/test/fixtures/ansible-inventory.json'),
    join(dir, '.secrets/mesh-secret'),
    out,
  ]);
  const mesh = readMesh(out);
  assert.equal(mesh.runtime, 'faasd');
  assert.equal(mesh.isolation, 'netns', 'lab hosts are namespaces');
  assert.equal(mesh.write_key_file, join(dir, '.secrets/write-key'));
  assert.deepEqual(
    mesh.nodes.map((n) => [n.id, n.function_url, n.listener_url, n.basic_auth_file]),
    [
      ['node-1', 'http://10.62.0.11:8080/function/syncmesh-fn', 'http://10.62.0.11:8091', null],
      ['node-2', 'http://10.62.0.12:8080/function/syncmesh-fn', 'http://10.62.0.12:8091', null],
    ],
  );
  assert.deepEqual(
    mesh.nodes.map((n) => [n.registry, n.registry_auth_file]),
    [
      ['10.62.0.11:5000', join(dir, '.secrets/registry-auth/node-1')],
      ['10.62.0.12:5000', null],
    ],
  );
  // real machines are hosts, not namespaces
  const real = JSON.parse(readFileSync(join(repo, 'cli/test/fixtures/ansible-inventory.json'), 'utf8'));
  real.syncmesh_nodes.hosts = ['pi-garden'];
  const realOut = join(dir, 'ansible-real.json');
  execFileSync('python3', [join(repo, 'ansible/lab/topology.py'), write('real-inventory.json', real), join(dir, '.secrets/mesh-secret'), realOut]);
  const realMesh = readMesh(realOut);
  assert.equal(realMesh.isolation, 'host');
  assert.equal(realMesh.nodes[0]!.function_url, 'http://192.168.1.40:8080/function/syncmesh-fn');
});

test('mesh file - the format as JSON Schema names every field the producers write', () => {
  const schema = meshJsonSchema() as { properties: Record<string, unknown>; required: string[] };
  for (const f of ['mesh', 'isolation', 'secret_file', 'write_key_file', 'nodes', 'runtime', 'logs_dir']) assert.ok(f in schema.properties, f);
  assert.ok(schema.required.includes('nodes'));
  const nodes = schema.properties['nodes'] as { items: { properties: Record<string, unknown> } };
  for (const f of ['id', 'function_url', 'gateway_url', 'basic_auth_file', 'listener_url', 'peers', 'agent_address']) assert.ok(f in nodes.items.properties, f);
});
