import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { addNode, deadUrl, meta, post, reading, seed, signFor, startNode, startStandIn, type TestNode } from './harness.js';

let a: TestNode;
let b: TestNode;
let c: TestNode;

// Deliberately uneven: averaging the nodes' averages would be wrong here.
const A = [reading('2017-07-31T01:00:00Z', 10, 80, 93000)];
const B = [reading('2017-07-31T02:00:00Z', 20, 40, 94000), reading('2017-07-31T03:00:00Z', 22, 42, 94100), reading('2017-07-31T04:00:00Z', 24, 44, 94200)];
const C = Array.from({ length: 6 }, (_, i) => reading(`2017-07-31T0${i}:30:00Z`, 30 + i, 20 + i, 95000 + i));
const ALL = [...A, ...B, ...C];

before(async () => {
  [a, b, c] = await Promise.all([startNode('mesh-a'), startNode('mesh-b'), startNode('mesh-c')]);
  await Promise.all([seed(a, A), seed(b, B), seed(c, C)]);
  // external_nodes reach registry members only
  await addNode(a, { id: 'mesh-b', address: b.url, lat: 42.7, lon: 23.3 });
  await addNode(a, { id: 'mesh-c', address: c.url, lat: 42.8, lon: 23.3 });
  // The first query on a fresh test server is slow (JIT); on a loaded machine it can pass the
  // 1.5 s node timeout. Warm every node once, alone.
  await Promise.all([a, b, c].map((n) => post(n.url, { query: AGG, request_type: 'aggregate' })));
});
after(async () => {
  await Promise.all([a.close(), b.close(), c.close()]);
});

const AGG =
  '{ sensorsAggregate(start_time: "2017-07-31T00:00:00Z", end_time: "2017-07-31T23:59:59Z") { count average_temperature average_humidity max_pressure min_temperature } }';
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

test('mesh - aggregate over three nodes equals the direct computation', async () => {
  const r = await post(a.url, { query: AGG, request_type: 'aggregate', external_nodes: [b.url, c.url] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const got = r.body.data!['sensorsAggregate'];
  assert.equal(got.count, ALL.length);
  assert.ok(Math.abs(got.average_temperature - mean(ALL.map((x) => x.temperature))) < 1e-12);
  assert.ok(Math.abs(got.average_humidity - mean(ALL.map((x) => x.humidity))) < 1e-12);
  assert.equal(got.max_pressure, 95005);
  assert.equal(got.min_temperature, 10);
  const ext = r.body.extensions!;
  assert.equal(ext['asked'], 3);
  assert.equal(ext['answered'], 3);
  assert.equal(ext['partial'], false);
  assert.deepEqual(ext['nodes'].map((n: { node: string }) => n.node).sort(), ['mesh-b', 'mesh-c']);
});

test('mesh - collect concatenates and applies the limit mesh-wide by timestamp', async () => {
  const all = await post(a.url, { query: '{ sensors { timestamp temperature } }', external_nodes: [b.url, c.url] });
  assert.equal(all.body.data!['sensors'].length, ALL.length);
  const r = await post(a.url, { query: '{ sensors(limit: 3) { timestamp temperature } }', external_nodes: [b.url, c.url] });
  assert.deepEqual(r.body.data!['sensors'], [
    { timestamp: '2017-07-31T00:30:00.000Z', temperature: 30 },
    { timestamp: '2017-07-31T01:00:00.000Z', temperature: 10 },
    { timestamp: '2017-07-31T01:30:00.000Z', temperature: 31 },
  ]);
  const est = await post(a.url, { query: '{ docEstimate }', external_nodes: [b.url, c.url] });
  assert.equal(est.body.data!['docEstimate'], ALL.length);
});

test('mesh - a node whose answer unzips to more than 64 MiB is reported as failed, the rest still answers', async () => {
  const bomb = gzipSync(Buffer.alloc(70 * 1024 * 1024, 32)); // 70 MiB of spaces, about 70 KB zipped
  const server = createServer((req, res) => {
    req.resume();
    // A signature names its receiver: the entry node first asks an unknown URL for its id.
    if (req.url?.endsWith('/healthz')) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"alive","node":"bomb"}');
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/function/syncmesh-fn`;
  // Unzipping 64 MiB takes seconds on a loaded machine: an entry node that waits long enough.
  const entry = await startNode('mesh-bomb-entry', { SYNCMESH_NODE_TIMEOUT_MS: '20000', SYNCMESH_DEADLINE_MS: '20000' });
  try {
    await seed(entry, A);
    await addNode(entry, { id: 'mesh-b', address: b.url, lat: 42.7, lon: 23.3 });
    await addNode(entry, { id: 'bomb', address: url, lat: 1, lon: 1 });
    const r = await post(entry.url, { query: AGG, request_type: 'aggregate', external_nodes: [b.url, url] });
    assert.equal(r.status, 200);
    assert.equal(r.body.data!['sensorsAggregate'].count, A.length + B.length);
    const failed = r.body.extensions!['failed'].find((f: { node: string }) => f.node === 'bomb');
    assert.equal(failed.code, 'EDGE_SYNCMESH_PEER_BAD_ANSWER');
  } finally {
    await entry.close();
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
});

test('mesh - a dead node and a hanging node are reported, the rest still answers within the deadline', async () => {
  const hanging = await startStandIn(Number.POSITIVE_INFINITY);
  const slowButOk = await startStandIn(300);
  const dead = await deadUrl();
  await addNode(a, { id: 'dead', address: dead, lat: 1, lon: 1 });
  await addNode(a, { id: 'hanging', address: hanging.url, lat: 1, lon: 1 });
  await addNode(a, { id: 'slow', address: slowButOk.url, lat: 1, lon: 1 });
  try {
    const started = Date.now();
    const r = await post(a.url, { query: AGG, request_type: 'aggregate', external_nodes: [b.url, dead, hanging.url, slowButOk.url] });
    const ms = Date.now() - started;
    assert.equal(r.status, 200);
    assert.ok(ms < 3000, `took ${ms} ms; the node timeout is 1500 ms`);
    assert.equal(r.body.data!['sensorsAggregate'].count, A.length + B.length);
    const ext = r.body.extensions!;
    assert.equal(ext['partial'], true);
    const byUrl = Object.fromEntries(ext['nodes'].map((n: { url: string; status: string }) => [n.url, n.status]));
    assert.equal(byUrl[dead], 'failed');
    assert.equal(byUrl[hanging.url], 'timeout');
    assert.equal(byUrl[slowButOk.url], 'ok');
    assert.equal(byUrl[b.url], 'ok');
    assert.deepEqual(ext['failed'].map((f: { node: string; code: string }) => `${f.node} ${f.code}`).sort(), [
      'dead EDGE_SYNCMESH_PEER_UNREACHABLE',
      'hanging EDGE_SYNCMESH_PEER_TIMEOUT',
    ]);
    assert.match(ext['failed'].find((f: { node: string }) => f.node === 'hanging').reason, /no answer within 1500 ms/);
  } finally {
    await meta(a.url, 'mutation { deleteNode(id: "dead") h: deleteNode(id: "hanging") s: deleteNode(id: "slow") }');
    await Promise.all([hanging.close(), slowButOk.close()]);
  }
});

test('mesh - nodes that list each other answer once each (loop safety)', async () => {
  const x = await startNode('loop-x', { SYNCMESH_MAX_HOPS: '3' });
  const y = await startNode('loop-y', { SYNCMESH_MAX_HOPS: '3' });
  try {
    await seed(x, A);
    await seed(y, B);
    await addNode(x, { id: 'loop-x', address: x.url, lat: 42.6, lon: 23.3, own_node: true });
    await addNode(x, { id: 'loop-y', address: y.url, lat: 42.7, lon: 23.3 });
    await addNode(y, { id: 'loop-y', address: y.url, lat: 42.7, lon: 23.3, own_node: true });
    await addNode(y, { id: 'loop-x', address: x.url, lat: 42.6, lon: 23.3 });
    const r = await post(x.url, { query: AGG, request_type: 'aggregate', use_meta_data: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data!['sensorsAggregate'].count, A.length + B.length);
    // y forwarded back to x, which recognised the request id.
    const yOutcome = r.body.extensions!['nodes'][0];
    assert.equal(yOutcome.node, 'loop-y');
    assert.equal(yOutcome.status, 'ok');
  } finally {
    await Promise.all([x.close(), y.close()]);
  }
});

test('mesh - forwarded requests need a valid signature', async () => {
  const forwarded = { query: AGG, request_type: 'aggregate', mesh: { request_id: 'abcdef0123456789', hop: 1, from: 'intruder' } };
  const unsigned = await post(b.url, forwarded);
  assert.equal(unsigned.status, 401);
  assert.equal(unsigned.body.errors![0]!.extensions.code, 'EDGE_SYNCMESH_UNAUTHORIZED');
  assert.match(unsigned.body.errors![0]!.message, /must be signed/);

  const wrongSecret = await post(b.url, forwarded, { sign: true, secret: 'not-the-mesh-secret-but-32-bytes-long' });
  assert.equal(wrongSecret.status, 401);
  assert.match(wrongSecret.body.errors![0]!.message, /signature does not match/);

  const text = JSON.stringify(forwarded);
  const stale = await post(b.url, text, { headers: signFor(b.url, text, { nowMs: Date.now() - 120_000 }) });
  assert.equal(stale.status, 401);
  assert.match(stale.body.errors![0]!.message, /allowed is 30 s/);

  const good = await post(b.url, forwarded, { sign: true });
  assert.equal(good.status, 200);
  assert.equal(good.body.extensions!['partials']['sensorsAggregate'].count, B.length);
  assert.equal(good.body.data, undefined, 'forwarded answers carry partials only');
});

test('mesh - sequential forwarding gives the same answer', async () => {
  const seq = await startNode('seq', { SYNCMESH_FORWARD_MODE: 'sequential' });
  try {
    await seed(seq, A);
    await addNode(seq, { id: 'mesh-b', address: b.url, lat: 42.7, lon: 23.3 });
    await addNode(seq, { id: 'mesh-c', address: c.url, lat: 42.8, lon: 23.3 });
    const r = await post(seq.url, { query: AGG, request_type: 'aggregate', external_nodes: [b.url, c.url] });
    assert.equal(r.body.data!['sensorsAggregate'].count, ALL.length);
  } finally {
    await seq.close();
  }
});
