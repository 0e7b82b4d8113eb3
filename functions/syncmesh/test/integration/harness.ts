/**
 * Real nodes for integration tests: each node is the function's HTTP server on an ephemeral
 * loopback port with its own MongoDB-compatible test server (or MONGODB_URI's real MongoDB,
 * one database prefix per node).
 */
import { once } from 'node:events';
import { appendFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MongoClient } from 'mongodb';
import { startTestServer, type TestServer } from '@syncmesh-edge/mongo-test-server';
import { MeshKeys, signV2 } from '@syncmesh-edge/mesh-auth';
import { waitForEvery } from '@syncmesh-edge/lab';
import { createLogger } from '@syncmesh-edge/log';
import { buildApp, loadConfig, routeOf, type App } from '../../src/index.js';

/** At least 32 bytes, as every mesh secret must be. */
export const MESH_SECRET = 'integration-test-mesh-secret-of-32-bytes-or-more';

/** Node id of each started node's URL (a signature names its receiver). */
const idsByUrl = new Map<string, string>();

/** The node id behind `url` (a node's URL, or a path under it). */
export function nodeIdOf(url: string): string {
  for (const [base, id] of idsByUrl) if (url.startsWith(base)) return id;
  throw new Error(`no test node at ${url}; pass the target id`);
}

/** v2 signature headers for a POST of `body` to `url` (the receiver is `target`, by default the node at `url`). */
export function signFor(
  url: string,
  body: Uint8Array | string,
  opts: { secret?: string; target?: string; origin?: string; contentEncoding?: string; nowMs?: number } = {},
): Record<string, string> {
  const headers = signV2(
    new MeshKeys(opts.secret ?? MESH_SECRET),
    {
      method: 'POST',
      path: routeOf(new URL(url).pathname),
      origin: opts.origin ?? 'test-client',
      target: opts.target ?? nodeIdOf(url),
      body,
      contentEncoding: opts.contentEncoding,
    },
    opts.nowMs === undefined ? {} : { nowMs: opts.nowMs },
  );
  // The no-secrets-in-logs test greps a whole run's logs for every signature that was sent.
  const wire = process.env['SYNCMESH_TEST_WIRE_FILE'];
  if (wire) appendFileSync(wire, `${headers['x-syncmesh-signature']}\n`);
  return headers;
}
/** Every test node's write key (SYNCMESH_WRITE_KEY) unless a test clears it. */
export const WRITE_KEY = 'integration-test-write-key-0123456789abcdef';

export interface TestNode {
  id: string;
  url: string;
  app: App;
  client: MongoClient;
  db: TestServer | undefined;
  /**
   * Stops the function (replication, then the server) and starts a new one on the same port and
   * database, as a restarted process would (`app` is the new one).
   */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a node; `env` overrides the test defaults (an undefined value removes one, e.g.
 * `SYNCMESH_WRITE_KEY: undefined`); `heapMb`: its test server's heap (default 96 MB, one sensor-month).
 */
export async function startNode(id: string, env: Record<string, string | undefined> = {}, opts: { heapMb?: number } = {}): Promise<TestNode> {
  const real = process.env['MONGODB_URI'];
  const db = real ? undefined : await startTestServer(opts.heapMb === undefined ? {} : { heapMb: opts.heapMb });
  const uri = real ?? db!.uri;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    MONGODB_URI: uri,
    SYNCMESH_NODE_ID: id,
    SYNCMESH_MESH_SECRET: MESH_SECRET,
    SYNCMESH_NODE_TIMEOUT_MS: '1500',
    SYNCMESH_DEADLINE_MS: '3000',
    // no background anti-entropy rounds unless a test asks for them
    SYNCMESH_ANTI_ENTROPY_INTERVAL_S: '0',
    SYNCMESH_WRITE_KEY: WRITE_KEY,
    // never a key file of the machine the tests run on
    SYNCMESH_WRITE_KEY_FILE: '/nonexistent/syncmesh-test/write-key',
    // Against one real MongoDB, nodes keep apart by database name.
    ...(real ? { SYNCMESH_DATABASES: `syncmesh_${id.replace(/\W/g, '_')}`, SYNCMESH_META_DATABASE: `syncmesh_meta_${id.replace(/\W/g, '_')}` } : {}),
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    ...env,
  });
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 3000 });
  const launch = async (port: number) => {
    const app = buildApp({ config, client, log: createLogger({ level: config.logLevel, svc: 'syncmesh-fn', node: id }) });
    await app.service.stores.ensureIndexes();
    await app.replication.start();
    app.server.listen(port, '127.0.0.1');
    await once(app.server, 'listening');
    return app;
  };
  const shut = async (app: App) => {
    await app.replication.stop();
    app.server.closeAllConnections();
    await new Promise<void>((r) => app.server.close(() => r()));
  };
  const first = await launch(0);
  const { port } = first.server.address() as AddressInfo;
  idsByUrl.set(`http://127.0.0.1:${port}/function/syncmesh-fn`, id);
  const node: TestNode = {
    id,
    url: `http://127.0.0.1:${port}/function/syncmesh-fn`,
    app: first,
    client,
    db,
    async restart() {
      await shut(node.app);
      node.app = await launch(port);
    },
    async close() {
      await shut(node.app);
      if (real) {
        for (const name of [...config.databases, config.metaDatabase]) await client.db(name).dropDatabase();
      }
      await client.close();
      await db?.stop();
    },
  };
  return node;
}

export interface Answer {
  status: number;
  body: {
    data?: Record<string, any>;
    errors?: Array<{ message: string; extensions: { code: string; [k: string]: unknown } }>;
    extensions?: Record<string, any>;
  };
}

/**
 * POSTs a JSON body (a string is sent as is); signs it when `sign` is set; sends
 * `Authorization: Bearer <WRITE_KEY>` with `write`, or `Bearer <key>` with `key`.
 */
export async function post(
  url: string,
  body: unknown,
  opts: { sign?: boolean; secret?: string; target?: string; write?: boolean; key?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const key = opts.key ?? (opts.write ? WRITE_KEY : undefined);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...(opts.headers ?? {}) };
  if (opts.sign)
    Object.assign(headers, signFor(url, text, { ...(opts.secret ? { secret: opts.secret } : {}), ...(opts.target ? { target: opts.target } : {}) }));
  const res = await fetch(url, { method: 'POST', headers, body: text, signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: (await res.json()) as Answer['body'] };
}

export const meta = (url: string, query: string, sign = true) => post(url, { request_type: 'meta', query }, { sign });

export async function addNode(at: TestNode, node: { id: string; address: string; lat: number; lon: number; own_node?: boolean; subscribed?: boolean }) {
  const fields = Object.entries(node)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? JSON.stringify(v) : v}`)
    .join(', ');
  const r = await meta(at.url, `mutation { addNode(node: {${fields}}) { id distance } }`);
  if (r.status !== 200) throw new Error(`addNode failed: ${JSON.stringify(r.body)}`);
  return r.body.data!['addNode'] as { id: string; distance: number | null };
}

/** Inserts readings straight into a node's database. */
export async function seed(node: TestNode, readings: Array<Record<string, unknown>>) {
  const dbName = node.app.config.databases[0]!;
  await node.client
    .db(dbName)
    .collection('sensor_data')
    .insertMany(readings.map((r) => ({ ...r })));
}

/** Polls `probe` every `everyMs` (50) until it returns true; fails with `what` after `timeoutMs` (the lab's one fixed-interval poll). */
export function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 15_000, everyMs = 50): Promise<void> {
  return waitForEvery(what, probe, timeoutMs, everyMs);
}

/** An HTTP server that accepts requests and answers after `delayMs` (or never, with Infinity). */
export async function startStandIn(
  delayMs: number,
  answer: unknown = { extensions: { node: 'stand-in', partials: {} } },
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    req.resume();
    if (!Number.isFinite(delayMs)) return; // blackhole: never answers
    // A signature names its receiver: the entry node first asks an unknown URL for its id.
    if (req.method === 'GET' && req.url?.endsWith('/healthz'))
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"alive","node":"stand-in"}');
    const t = setTimeout(() => {
      timers.delete(t);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    }, delayMs);
    timers.add(t);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/function/syncmesh-fn`,
    server,
    async close() {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A peer that must not be contacted: counts the connections it gets (and answers each request 500). */
export async function startWatchedPeer(): Promise<{ url: string; readonly connections: number; close(): void }> {
  let connections = 0;
  const server = createServer((_req, res) => res.writeHead(500).end());
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/function/syncmesh-fn`,
    get connections() {
      return connections;
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A URL where nothing listens. */
export async function deadUrl(): Promise<string> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/function/syncmesh-fn`;
}

export const reading = (ts: string, t: number, h: number, p: number, sensor = 1) => ({
  sensor_id: sensor,
  location: 100 + sensor,
  lat: 42.6,
  lon: 23.3,
  timestamp: new Date(ts),
  temperature: t,
  humidity: h,
  pressure: p,
});
