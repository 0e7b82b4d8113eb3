/**
 * Attacks on the signed surface of running nodes (issue 15, findings 5-7): forged, replayed,
 * cross-node-replayed and truncated signatures, an endpoint swap, an old body resurrecting a
 * deleted replica, oversize bodies (refused before they are read, answered readably to a client
 * that sends everything first), and the outbox's shrink after a 413. Requests between nodes
 * are captured on the wire by a recording proxy in front of the subscriber, then replayed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { appendFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { BSON, ObjectId } from 'mongodb';
import { SIGNED_READS } from '../../src/app.js';
import { addNode, deadUrl, eventually, MESH_SECRET, meta, reading, signFor, startNode, type TestNode } from './harness.js';

let a: TestNode;
let b: TestNode;
let c: TestNode;
let proxy: RecordingProxy;

interface Captured {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  status: number;
}

interface RecordingProxy {
  url: string;
  captured: Captured[];
  server: Server;
  close(): Promise<void>;
}

/** Every signature seen on the wire, for the no-secrets-in-logs test (SYNCMESH_TEST_WIRE_FILE). */
function recordWire(headers: IncomingHttpHeaders | Record<string, string>): void {
  const file = process.env['SYNCMESH_TEST_WIRE_FILE'];
  const sig = headers['x-syncmesh-signature'];
  if (file && typeof sig === 'string') appendFileSync(file, `${sig}\n`);
}

/** An HTTP proxy to `target` that records every request and the status it got. */
async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const captured: Captured[] = [];
  const base = new URL(target);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const entry: Captured = { method: req.method ?? 'POST', path: req.url ?? '/', headers: req.headers, body, status: 0 };
      captured.push(entry);
      recordWire(req.headers);
      const suffix = (req.url ?? '').replace(/^\/function\/[^/]+/, '');
      const out = request(
        { host: base.hostname, port: base.port, method: req.method, path: `${base.pathname}${suffix}`, headers: { ...req.headers, host: base.host } },
        (answer) => {
          entry.status = answer.statusCode ?? 0;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', () => res.writeHead(502).end());
      out.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/function/syncmesh-fn`,
    captured,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Sends a captured request again, as is (or with changed headers/path), to `url`. */
async function resend(url: string, cap: Captured, change: { headers?: Record<string, string>; path?: string } = {}) {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(cap.headers)) if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
  Object.assign(headers, change.headers ?? {});
  recordWire(headers);
  const res = await fetch(`${url}${change.path ?? cap.path.replace(/^\/function\/[^/]+/, '')}`, { method: cap.method, headers, body: cap.body });
  return { status: res.status, body: (await res.json()) as { errors?: Array<{ message: string; extensions: { code: string } }> } & Record<string, unknown> };
}

/** A signed EJSON POST the way the listener (path /events, /resync) or an origin (/replicate) sends it. */
async function signedPost(to: TestNode, path: string, body: unknown, opts: { origin?: string; target?: string; headers?: Record<string, string> } = {}) {
  const text = BSON.EJSON.stringify(body, { relaxed: true });
  const headers = {
    'content-type': 'application/json',
    ...signFor(`${to.url}${path}`, text, { origin: opts.origin ?? to.id, ...(opts.target ? { target: opts.target } : {}) }),
    ...(opts.headers ?? {}),
  };
  recordWire(headers);
  const res = await fetch(`${to.url}${path}`, { method: 'POST', headers, body: text });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const codeOf = (r: { body: { errors?: Array<{ extensions: { code: string } }> } }) => r.body.errors?.[0]?.extensions.code;
const messageOf = (r: { body: { errors?: Array<{ message: string }> } }) => r.body.errors?.[0]?.message ?? '';
const replicas = (n: TestNode) => n.client.db('syncmesh').collection('sensor_data_replicas');
const insertEvent = (doc: Record<string, unknown> & { _id: unknown }) => ({ op: 'insert', db: 'syncmesh', coll: 'sensor_data', key: { _id: doc._id }, doc });

/**
 * Sends only the head of a request (a huge declared body that never comes) and returns the
 * answer's status line and body: a node that reads the body before checking would not answer.
 */
function headOnly(url: string, path: string, headers: Record<string, string>, timeoutMs = 5_000): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms: the node waited for the body`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      data += d;
      const end = data.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(data)?.[1] ?? NaN);
      if (end >= 0 && data.length - end - 4 >= length) {
        clearTimeout(timer);
        socket.destroy();
        resolve({ status: Number(data.slice(9, 12)), text: data.slice(end + 4) });
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    const head = Object.entries({ host: u.host, 'content-type': 'application/json', 'content-length': String(100 * 1024 * 1024), ...headers })
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n');
    socket.write(`POST ${u.pathname}${path} HTTP/1.1\r\n${head}\r\n\r\n{"origin":`);
  });
}

before(async () => {
  // A gzips every replication body (SYNCMESH_GZIP_MIN_BYTES=0; by default those under 1 KiB go
  // uncompressed), so the captured /replicate is the compressed kind the replay tests are about
  [a, b, c] = await Promise.all([startNode('atk-a', { SYNCMESH_GZIP_MIN_BYTES: '0' }), startNode('atk-b'), startNode('atk-c')]);
  proxy = await startRecordingProxy(b.url);
  await addNode(a, { id: 'atk-a', address: a.url, lat: 42.69, lon: 23.32, own_node: true });
  // A replicates to B through the recording proxy: what travels between nodes is captured.
  await addNode(a, { id: 'atk-b', address: proxy.url, lat: 42.65, lon: 23.37, subscribed: true });
  const docs = [1, 2].map((i) => ({ _id: new ObjectId(), ...reading(`2017-07-0${i}T00:00:00Z`, 20 + i, 50, 93000) }));
  const r = await signedPost(a, '/events', { source: { node: 'atk-a' }, events: docs.map(insertEvent) });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await eventually('B holds the replicas', async () => (await replicas(b).countDocuments({ _origin: 'atk-a' })) === 2);
  await eventually('the /replicate was captured', async () => proxy.captured.some((x) => x.path.endsWith('/replicate') && x.status === 200));
});
after(async () => {
  await proxy.close();
  await Promise.all([a.close(), b.close(), c.close()]);
});

const captured = () => proxy.captured.find((x) => x.path.endsWith('/replicate') && x.status === 200)!;

test('attack - a /replicate captured on the wire and sent again to the same node is refused (replay)', async () => {
  const cap = captured();
  assert.match(String(cap.headers['x-syncmesh-signature']), /^v2=[0-9a-f]{64}$/, 'nodes sign v2');
  assert.equal(cap.headers['x-syncmesh-target'], 'atk-b');
  assert.equal(cap.headers['content-encoding'], 'gzip', 'the MAC covers the gzipped bytes as sent');
  const r = await resend(b.url, cap);
  assert.equal(r.status, 401);
  assert.equal(codeOf(r), 'EDGE_SYNCMESH_UNAUTHORIZED');
  assert.match(messageOf(r), /replayed request: this nonce was already used/);
});

test('attack - a /replicate for B replayed at C is refused (per-node keys, target bound)', async () => {
  const cap = captured();
  const asIs = await resend(c.url, cap);
  assert.equal(asIs.status, 401);
  assert.match(messageOf(asIs), /signed for another node/);
  // Claiming C as the target does not help: the MAC was made with B's key for B.
  const retargeted = await resend(c.url, cap, { headers: { 'x-syncmesh-target': 'atk-c' } });
  assert.equal(retargeted.status, 401);
  assert.match(messageOf(retargeted), /signature does not match/);
  assert.equal(await replicas(c).countDocuments(), 0, 'nothing was written at C');
});

test('attack - a signed request replayed against another endpoint is refused (endpoint swap)', async () => {
  // A /replicate sent to /events of the same node.
  const cap = captured();
  const swapped = await resend(b.url, cap, { path: '/events', headers: { 'x-syncmesh-nonce': randomBytes(16).toString('hex') } });
  assert.equal(swapped.status, 401);
  assert.match(messageOf(swapped), /signature does not match/);
  // A listener's /events for A, replayed to A's /replicate.
  const text = BSON.EJSON.stringify({ origin: 'atk-a', batches: [] }, { relaxed: true });
  const headers = { 'content-type': 'application/json', ...signFor(`${a.url}/events`, text, { origin: 'atk-a' }) };
  recordWire(headers);
  const res = await fetch(`${a.url}/replicate`, { method: 'POST', headers, body: text });
  assert.equal(res.status, 401);
  assert.match(((await res.json()) as { errors: Array<{ message: string }> }).errors[0]!.message, /signature does not match/);
});

test('attack - forged and wrong-secret signatures are refused', async () => {
  const body = {
    origin: 'atk-z',
    batches: [{ db: 'syncmesh', coll: 'sensor_data', seq: 1, ops: [{ op: 'upsert', doc: { _id: 'forged', temperature: 99 } }] }],
  };
  const forged = await signedPost(b, '/replicate', body, { origin: 'atk-z', headers: { 'x-syncmesh-signature': `v2=${randomBytes(32).toString('hex')}` } });
  assert.equal(forged.status, 401);
  assert.match(messageOf(forged), /signature does not match/);
  const text = JSON.stringify(body);
  const wrong = await fetch(`${b.url}/replicate`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signFor(`${b.url}/replicate`, text, { secret: 'another-mesh-secret-of-at-least-32-bytes', origin: 'atk-z' }),
    },
    body: text,
  });
  assert.equal(wrong.status, 401);
  assert.equal(await replicas(b).countDocuments({ _origin: 'atk-z' }), 0);
});

test('attack - truncated and malformed signatures are refused', async () => {
  const body = { origin: 'atk-z', batches: [] };
  const text = JSON.stringify(body);
  const good = signFor(`${b.url}/replicate`, text, { origin: 'atk-z' });
  const variants: Array<[string, Record<string, string>, RegExp]> = [
    ['63 hex digits', { 'x-syncmesh-signature': good['x-syncmesh-signature']!.slice(0, -1) }, /64 lowercase hex digits/],
    ['an empty MAC', { 'x-syncmesh-signature': 'v2=' }, /64 lowercase hex digits/],
    ['no scheme', { 'x-syncmesh-signature': good['x-syncmesh-signature']!.slice(3) }, /scheme must be v2/],
    ['upper-case hex', { 'x-syncmesh-signature': good['x-syncmesh-signature']!.toUpperCase().replace('V2=', 'v2=') }, /64 lowercase hex digits/],
    ['a short nonce', { 'x-syncmesh-nonce': good['x-syncmesh-nonce']!.slice(0, 16) }, /32 lowercase hex digits/],
  ];
  for (const [what, change, message] of variants) {
    const headers = { 'content-type': 'application/json', ...good, ...change };
    recordWire(headers);
    const res = await fetch(`${b.url}/replicate`, { method: 'POST', headers, body: text });
    assert.equal(res.status, 401, what);
    assert.match(((await res.json()) as { errors: Array<{ message: string }> }).errors[0]!.message, message, what);
  }
  const { 'x-syncmesh-nonce': _n, ...noNonce } = good;
  const res = await fetch(`${b.url}/replicate`, { method: 'POST', headers: { 'content-type': 'application/json', ...noNonce }, body: text });
  assert.equal(res.status, 401, 'a missing nonce');
});

test('attack - v1 signatures are refused unless SYNCMESH_AUTH_ACCEPT_V1 is on', async () => {
  const body = JSON.stringify({ query: '{ docEstimate }', mesh: { request_id: 'v1-probe-0123456789', hop: 1, from: 'old-node' } });
  const v1 = () => {
    const ts = String(Date.now());
    return { 'x-syncmesh-timestamp': ts, 'x-syncmesh-signature': `v1=${createHmac('sha256', MESH_SECRET).update(`v1:${ts}:`).update(body).digest('hex')}` };
  };
  const off = await fetch(b.url, { method: 'POST', headers: { 'content-type': 'application/json', ...v1() }, body });
  assert.equal(off.status, 401);
  assert.match(((await off.json()) as { errors: Array<{ message: string }> }).errors[0]!.message, /scheme must be v2/);
  const d = await startNode('atk-v1', { SYNCMESH_AUTH_ACCEPT_V1: 'true' });
  try {
    const on = await fetch(d.url, { method: 'POST', headers: { 'content-type': 'application/json', ...v1() }, body });
    assert.equal(on.status, 200, 'accepted during the one-release upgrade window');
  } finally {
    await d.close();
  }
});

test('attack - a /replicate signed by one node for another origin is refused', async () => {
  const r = await signedPost(
    b,
    '/replicate',
    { origin: 'atk-a', batches: [{ db: 'syncmesh', coll: 'sensor_data', seq: Date.now() * 1000, ops: [{ op: 'delete', id: new ObjectId() }] }] },
    { origin: 'atk-c' },
  );
  assert.equal(r.status, 403);
  assert.equal(codeOf(r), 'EDGE_SYNCMESH_ORIGIN_MISMATCH');
});

test('attack - a replayed registry change is refused', async () => {
  const text = JSON.stringify({
    request_type: 'meta',
    query:
      'mutation { addNode(node: {id: "atk-rogue", address: "http://10.9.9.9:8080/function/syncmesh-fn", lat: 1, lon: 1, subscribed: true, initial_sync: false}) { id } }',
  });
  const headers = { 'content-type': 'application/json', ...signFor(a.url, text) };
  recordWire(headers);
  const first = await fetch(a.url, { method: 'POST', headers, body: text });
  assert.equal(first.status, 200);
  await meta(a.url, 'mutation { deleteNode(id: "atk-rogue") }');
  const again = await fetch(a.url, { method: 'POST', headers, body: text });
  assert.equal(again.status, 401);
  assert.equal((await meta(a.url, '{ node(id: "atk-rogue") { id } }', false)).body.data!['node'], null, 'the replay did not re-add the node');
});

test('attack - an old _rev cannot resurrect a deleted replica or overwrite a newer one', async () => {
  const x = new ObjectId();
  const y = new ObjectId();
  const send = (seq: number, ops: unknown[]) =>
    signedPost(b, '/replicate', { origin: 'atk-z', batches: [{ db: 'syncmesh', coll: 'sensor_data', seq, ops }] }, { origin: 'atk-z' });
  const doc = (id: ObjectId, t: number) => ({ _id: id, ...reading('2017-07-05T00:00:00Z', t, 50, 93000) });
  assert.equal(
    (
      await send(300, [
        { op: 'upsert', doc: doc(x, 1) },
        { op: 'upsert', doc: doc(y, 5) },
      ])
    ).status,
    200,
  );
  assert.equal((await send(400, [{ op: 'delete', id: x }])).status, 200);
  // The old body again (an origin re-sending a batch whose acknowledgement it lost).
  const old = await send(300, [{ op: 'upsert', doc: doc(x, 1) }]);
  assert.equal(old.status, 200);
  assert.equal(old.body['stale'], 1);
  assert.equal(await replicas(b).countDocuments({ _origin: 'atk-z', _origin_id: x }), 0, 'the deleted reading stays deleted');
  // An older version never replaces a newer one.
  const older = await send(250, [{ op: 'upsert', doc: doc(y, 4) }]);
  assert.equal(older.body['stale'], 1);
  assert.equal((await replicas(b).findOne({ _origin: 'atk-z', _origin_id: y }))?.['temperature'], 5);
  // A newer write of a deleted reading (re-inserted at the origin) does come back.
  assert.equal((await send(500, [{ op: 'upsert', doc: doc(x, 7) }])).body['stale'], 0);
  assert.equal((await replicas(b).findOne({ _origin: 'atk-z', _origin_id: x }))?.['temperature'], 7);
  // After a snapshot's end, anything older than the snapshot is stale.
  await send(600, [
    { op: 'upsert', doc: doc(y, 6) },
    { op: 'upsert', doc: doc(x, 7) },
    { op: 'snapshot_end', since: 600 },
  ]);
  const z = new ObjectId();
  assert.equal((await send(550, [{ op: 'upsert', doc: doc(z, 9) }])).body['stale'], 1);
  assert.equal(await replicas(b).countDocuments({ _origin: 'atk-z', _origin_id: z }), 0);
  await replicas(b).deleteMany({ _origin: 'atk-z' });
});

test('attack - an unsigned body to a signed endpoint is refused before it is read', async () => {
  for (const path of ['/replicate', '/events', '/resync']) {
    const r = await headOnly(b.url, path, {});
    assert.equal(r.status, 401, path);
    assert.match(r.text, /accepts only requests signed with the mesh secret/);
  }
});

test('attack - stale, foreign or replayed signature headers are refused before the body is read', async () => {
  const cap = captured();
  const asHeaders = (h: IncomingHttpHeaders) =>
    Object.fromEntries(Object.entries(h).filter(([k, v]) => k.startsWith('x-syncmesh-') && typeof v === 'string')) as Record<string, string>;
  const replayed = await headOnly(b.url, '/replicate', { ...asHeaders(cap.headers), 'content-encoding': 'gzip' });
  assert.equal(replayed.status, 401);
  assert.match(replayed.text, /replayed request/);
  const stale = await headOnly(b.url, '/replicate', { ...signFor(`${b.url}/replicate`, 'x', { nowMs: Date.now() - 120_000 }) });
  assert.equal(stale.status, 401);
  assert.match(stale.text, /allowed is 30 s/);
  const foreign = await headOnly(c.url, '/replicate', { ...signFor(`${b.url}/replicate`, 'x') });
  assert.equal(foreign.status, 401);
  assert.match(foreign.text, /signed for another node/);
});

test('attack - a body declared larger than the cap is refused with 413 before it is read', async () => {
  const r = await headOnly(a.url, '', {});
  assert.equal(r.status, 413);
  assert.match(r.text, /EDGE_SYNCMESH_BODY_TOO_LARGE/);
  assert.match(r.text, /allowed/);
});

test('attack - a client that sends its whole body first (Python urllib) reads the 413, not a reset', async () => {
  const script = [
    'import sys, urllib.request, urllib.error',
    'req = urllib.request.Request(sys.argv[1], data=b"{" + b" " * (3 * 1024 * 1024) + b"}", headers={"Content-Type": "application/json"})',
    'try:',
    '    urllib.request.urlopen(req, timeout=20)',
    '    print("200")',
    'except urllib.error.HTTPError as e:',
    '    print(e.code, e.read().decode())',
    'except Exception as e:',
    '    print("error", type(e).__name__, e)',
  ].join('\n');
  const out = await new Promise<string>((resolve, reject) =>
    execFile('python3', ['-c', script, a.url], { timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
  assert.match(out, /^413 /, out.slice(0, 300));
  assert.match(out, /EDGE_SYNCMESH_BODY_TOO_LARGE/);
});

test('attack - the outbox sends fewer batches per request after a subscriber answers 413', async () => {
  // S takes signed bodies of at most 16 x 4096 bytes; 60 batches of ~2 KB do not fit in one request.
  const s = await startNode('atk-small', { SYNCMESH_MAX_BODY_BYTES: '4096' });
  const sProxy = await startRecordingProxy(s.url);
  try {
    // While S is unreachable, A's outbox fills up for it.
    await addNode(a, { id: 'atk-small', address: await deadUrl(), lat: 42.6, lon: 23.3, subscribed: true, initial_sync: false } as never);
    for (let i = 0; i < 60; i++) {
      const d = { _id: new ObjectId(), ...reading('2017-07-06T00:00:00Z', i, 50, 93000), note: 'x'.repeat(2000) };
      const r = await signedPost(a, '/events', { source: { node: 'atk-a' }, events: [insertEvent(d)] });
      assert.equal(r.status, 200);
    }
    await meta(a.url, `mutation { updateNode(id: "atk-small", node: {address: "${sProxy.url}"}) { id } }`);
    // One more write wakes A's sender from its backoff (up to 30 s after a long outage).
    const last = { _id: new ObjectId(), ...reading('2017-07-06T01:00:00Z', 99, 50, 93000) };
    assert.equal((await signedPost(a, '/events', { source: { node: 'atk-a' }, events: [insertEvent(last)] })).status, 200);
    await eventually('every batch reached S', async () => (await replicas(s).countDocuments({ _origin: 'atk-a' })) >= 61, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}; S answered ${sProxy.captured.map((x) => x.status).join(',')}`, { cause: err });
    });
    const answers = sProxy.captured.filter((x) => x.path.endsWith('/replicate')).map((x) => x.status);
    assert.ok(answers.includes(413), `S refused a request as too large: ${answers.join(',')}`);
    // (the last capture may still be waiting for its answer: 0)
    assert.ok(answers.lastIndexOf(200) > answers.indexOf(413), `smaller requests were accepted after the 413: ${answers.join(',')}`);
    assert.ok(
      answers.every((x) => x === 200 || x === 413 || x === 0),
      answers.join(','),
    );
  } finally {
    await meta(a.url, 'mutation { deleteNode(id: "atk-small") }');
    await sProxy.close();
    await s.close();
  }
});

test('attack - slow signed bodies hold at most SIGNED_READS.slots reads; the next signed request gets a coded 503, then works again', async () => {
  // Each holder sends valid-looking signature headers (the check needs no key) and a body that
  // never ends: before the bound, every such connection could make the node buffer up to
  // 16 × SYNCMESH_MAX_BODY_BYTES.
  const holders: Socket[] = [];
  const u = new URL(b.url);
  try {
    for (let i = 0; i < SIGNED_READS.slots; i++) {
      const socket = connect(Number(u.port), u.hostname);
      await once(socket, 'connect');
      const head = Object.entries({
        host: u.host,
        'content-type': 'application/json',
        'content-length': String(1024 * 1024),
        ...signFor(`${b.url}/events`, `holder-${i}`, { origin: b.id }),
      })
        .map(([k, v]) => `${k}: ${v}`)
        .join('\r\n');
      socket.write(`POST ${u.pathname}/events HTTP/1.1\r\n${head}\r\n\r\n{"events":[`);
      socket.on('error', () => {}); // closed by the test
      holders.push(socket);
    }
    await eventually('every slot is held', async () => b.app.signedReads.inUse === SIGNED_READS.slots, 5_000);
    const started = Date.now();
    const r = await signedPost(b, '/events', { source: { node: b.id }, events: [] });
    const waited = Date.now() - started;
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body['errors'][0].extensions.code, 'EDGE_SYNCMESH_BUSY');
    assert.match(r.body['errors'][0].message, /retry/);
    assert.ok(waited >= SIGNED_READS.waitMs - 100, `waited ${waited} ms for a slot before refusing`);
    // An unsigned query is not affected by the bound.
    const q = await fetch(b.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
    assert.notEqual(q.status, 503);
  } finally {
    for (const s of holders) s.destroy();
  }
  await eventually(
    'a signed request is read again once the holders are gone',
    async () => (await signedPost(b, '/events', { source: { node: b.id }, events: [] })).status === 200,
  );
});
