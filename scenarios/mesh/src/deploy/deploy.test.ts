import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeshError } from '../errors.js';
import { checkSpec, imageSource, nodesFromTopology } from './deploy.js';
import type { Topology } from '../plan/topology.js';

test('imageSource - a node registry reference names its host and repository; other transports pass as they are', () => {
  assert.deepEqual(imageSource('10.0.0.11:5000/hello:1'), { source: 'docker://10.0.0.11:5000/hello:1', host: '10.0.0.11:5000', repo: 'hello:1' });
  assert.deepEqual(imageSource('docker://10.0.0.11:5000/team/hello'), {
    source: 'docker://10.0.0.11:5000/team/hello',
    host: '10.0.0.11:5000',
    repo: 'team/hello:latest',
  });
  assert.deepEqual(imageSource('hello:2'), { source: 'docker://hello:2', repo: 'hello:2' });
  assert.deepEqual(imageSource('oci-archive:/tmp/x.tar'), { source: 'oci-archive:/tmp/x.tar' });
  assert.deepEqual(imageSource('containers-storage:localhost/x:1'), { source: 'containers-storage:localhost/x:1' });
});

test('checkSpec - names, repositories and secrets are checked before anything changes', () => {
  assert.equal(checkSpec({ name: 'hello', image: '10.0.0.11:5000/hello:1' }), 'hello:1');
  assert.equal(checkSpec({ name: 'hello', image: 'oci-archive:/tmp/x.tar' }), 'hello:latest');
  for (const bad of [
    { name: 'Hello', image: 'x:1' },
    { name: 'a'.repeat(64), image: 'x:1' },
    { name: 'hello', image: '' },
    { name: 'hello', image: 'x:1', target: 'UPPER:1' },
    { name: 'hello', image: 'x:1', secrets: ['../etc'] },
  ]) {
    assert.throws(
      () => checkSpec(bad),
      (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_FN_BAD_INPUT',
      JSON.stringify(bad),
    );
  }
});

test('nodesFromTopology - an unknown node, a node without registry details: clear errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fn-topo-'));
  writeFileSync(join(dir, 'ba'), 'admin:pw\n');
  writeFileSync(join(dir, 'ra'), 'syncmesh:pw2\n');
  const node = (id: string, extra: object) => ({ id, address: '10.0.0.1', ...extra }) as unknown as Topology['nodes'][number];
  const topo = {
    mesh: 'm',
    nodes: [
      node('node-1', { gateway_url: 'http://10.0.0.1:8080', basic_auth_file: join(dir, 'ba'), registry: '10.0.0.1:5000', registry_auth_file: join(dir, 'ra') }),
      node('node-2', { gateway_url: 'http://10.0.0.2:8080', basic_auth_file: join(dir, 'ba'), registry: '10.0.0.2:5000', registry_auth_file: null }),
    ],
  } as unknown as Topology;
  assert.deepEqual(nodesFromTopology(topo, ['node-1']), [
    { id: 'node-1', gatewayUrl: 'http://10.0.0.1:8080', basicAuth: 'admin:pw', registry: '10.0.0.1:5000', registryAuth: 'syncmesh:pw2' },
  ]);
  assert.throws(
    () => nodesFromTopology(topo, ['node-3']),
    (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_UNKNOWN_NODE' && /node-1, node-2/.test(e.message),
  );
  assert.throws(
    () => nodesFromTopology(topo),
    (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_FN_BAD_INPUT' && /node-2 has no registry_auth_file/.test(e.message),
  );
});
