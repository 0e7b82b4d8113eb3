/**
 * The mesh scripts' registry requests against a real function process: signed with protocol v2
 * for the node they reach (its id learnt from /healthz), refused with another secret. Loopback
 * only: no namespaces, no root.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestServer, type TestServer } from '@syncmesh-edge/mongo-test-server';
import { listNodes, nodeIdAt, ownNode, upsertPeers } from '../../src/client/client.js';
import type { MeshError } from '../../src/errors.js';

const SECRET = 'mesh-scripts-test-secret-of-32-bytes-or-more';
const FUNCTION_MAIN = fileURLToPath(new URL('../../../../../functions/syncmesh/dist/src/main.js', import.meta.url));

let db: TestServer;
let fn: ChildProcess;
let url: string;

before(async () => {
  db = await startTestServer();
  const port = 30000 + (process.pid % 20000);
  fn = spawn(process.execPath, [FUNCTION_MAIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      MONGODB_URI: db.uri,
      SYNCMESH_NODE_ID: 'scripts-node',
      SYNCMESH_MESH_SECRET: SECRET,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  url = `http://127.0.0.1:${port}/function/syncmesh-fn`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error('the function did not become ready within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
});
after(async () => {
  fn.kill('SIGTERM');
  await new Promise((r) => fn.once('exit', r));
  await db.stop();
});

test('client - registry requests are signed v2 for the node they reach', async () => {
  assert.equal(await nodeIdAt(url), 'scripts-node');
  await upsertPeers(url, SECRET, [
    { id: 'scripts-node', address: url, lat: 42.69, lon: 23.32 },
    { id: 'peer-1', address: 'http://10.0.0.9:8080/function/syncmesh-fn', lat: 42.6, lon: 23.3 },
  ]);
  // Again: the peers exist, so each is updated (a second signed request per peer, fresh nonces).
  await upsertPeers(url, SECRET, [{ id: 'peer-1', address: 'http://10.0.0.9:8080/function/syncmesh-fn', lat: 42.61, lon: 23.31 }]);
  assert.deepEqual((await listNodes(url, SECRET)).map((n) => n.id).sort(), ['peer-1', 'scripts-node']);
  assert.equal(await ownNode(url, SECRET), null);
});

test("client - a 30-node mesh's 29 peers are registered in batches the function accepts (at most 20 root fields each)", async () => {
  const peers = Array.from({ length: 29 }, (_, i) => ({
    id: `batch-${i + 1}`,
    address: `http://10.0.1.${i + 1}:8080/function/syncmesh-fn`,
    lat: 42 + i / 100,
    lon: 23,
  }));
  await upsertPeers(url, SECRET, peers.slice(25)); // some of the second batch exist already
  await upsertPeers(url, SECRET, peers);
  const listed = (await listNodes(url, SECRET)).map((n) => n.id).filter((id) => id.startsWith('batch-'));
  assert.deepEqual(listed.sort(), peers.map((p) => p.id).sort());
});

test("client - another secret is refused with the node's reason", async () => {
  await assert.rejects(upsertPeers(url, 'not-the-mesh-secret-but-32-bytes-long', [{ id: 'peer-2', address: url, lat: 1, lon: 1 }]), (err: MeshError) => {
    assert.equal(err.code, 'EDGE_MESH_REQUEST');
    assert.match(err.message, /401.*signature does not match/);
    return true;
  });
});
