/**
 * Builds the function's HTTP server without listening (main.ts listens). of-watchdog's http
 * mode proxies every path under /function/<name>/ to it; the same server runs standalone on
 * local mesh nodes, so both `/` and `/function/<name>` reach the query endpoint.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gunzip as gunzipCb, gzip as gzipCb } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type { MongoClient } from 'mongodb';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { SyncmeshError } from './errors.js';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, verifyRequest } from './mesh/auth.js';
import { NodeRegistry } from './mesh/registry.js';
import { parseEnvelope } from './request.js';
import { ReplicationService } from './replication/service.js';
import { errorBody, SyncmeshService, type Reply } from './service.js';

const gzip = promisify(gzipCb);
const gunzip = promisify(gunzipCb);

/** How long /readyz waits for the database. */
const READY_PING_TIMEOUT_MS = 1_000;

export interface AppDeps {
  config: Config;
  client: MongoClient;
  log: Logger;
}

export interface App {
  config: Config;
  server: Server;
  service: SyncmeshService;
  registry: NodeRegistry;
  replication: ReplicationService;
}

type Auth = { signed: boolean };

/** Path without the faasd gateway prefix (/function/<name>) and without the query string. */
export function routeOf(url: string | undefined): string {
  const path = (url ?? '/').split('?')[0]!;
  const stripped = path.replace(/^\/function\/[^/]+/, '');
  return stripped === '' ? '/' : stripped.replace(/\/+$/, '') || '/';
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      throw new SyncmeshError('EDGE_SYNCMESH_BODY_TOO_LARGE', `the body is larger than ${maxBytes} bytes`, { details: { allowed: `at most ${maxBytes} bytes` } });
    }
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding === 'identity') return raw;
  if (encoding !== 'gzip') {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ENCODING', `content-encoding '${encoding}' is not supported`, { details: { allowed: ['identity', 'gzip'] } });
  }
  try {
    return await gunzip(raw, { maxOutputLength: maxBytes });
  } catch (err) {
    const tooLarge = (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || /too large|exceeds/i.test((err as Error).message);
    if (tooLarge) {
      throw new SyncmeshError('EDGE_SYNCMESH_BODY_TOO_LARGE', `the decompressed body is larger than ${maxBytes} bytes`, { details: { allowed: `at most ${maxBytes} bytes` } });
    }
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ENCODING', 'the body is not valid gzip', { cause: err });
  }
}

export function buildApp(deps: AppDeps): App {
  const { config, client, log } = deps;
  const registry = new NodeRegistry(client.db(config.metaDatabase));
  const replication = new ReplicationService({ config, client, registry, log: log.child({ module: 'replication' }) });
  const selfPort = () => (server.address() as AddressInfo | null)?.port;
  const service = new SyncmeshService({ config, client, registry, replication, log: log.child({ module: 'service' }), selfPort });
  const httpLog = log.child({ module: 'http' });

  async function send(req: IncomingMessage, res: ServerResponse, reply: Reply): Promise<void> {
    const json = JSON.stringify(reply.body);
    const acceptsGzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8', vary: 'accept-encoding' };
    let payload: Buffer | string = json;
    if (acceptsGzip && Buffer.byteLength(json) >= config.gzipMinBytes) {
      payload = await gzip(json);
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = Buffer.byteLength(payload);
    res.writeHead(reply.status, headers);
    res.end(payload);
  }

  function authOf(req: IncomingMessage, body: Buffer): Auth {
    const present = req.headers[SIGNATURE_HEADER] !== undefined || req.headers[TIMESTAMP_HEADER] !== undefined;
    if (!present) return { signed: false };
    if (!config.meshSecret) {
      throw new SyncmeshError('EDGE_SYNCMESH_UNAUTHORIZED', 'this node has no mesh secret configured, so it cannot accept signed requests');
    }
    const verdict = verifyRequest(config.meshSecret, req.headers, body, { replayWindowMs: config.replayWindowMs });
    if (!verdict.ok) throw new SyncmeshError('EDGE_SYNCMESH_UNAUTHORIZED', `bad mesh signature: ${verdict.reason}`);
    return { signed: true };
  }

  async function handleQuery(req: IncomingMessage): Promise<Reply> {
    const body = await readBody(req, config.maxBodyBytes);
    const auth = authOf(req, body);
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw new SyncmeshError('EDGE_SYNCMESH_BAD_JSON', `the body is not valid JSON: ${(err as Error).message}`, {
        details: { allowed: 'a JSON object {query, variables, database, collection, request_type, external_nodes, use_meta_data, radius}' },
      });
    }
    return service.handle(parseEnvelope(json, config), auth.signed, req.headers['authorization']);
  }

  /** Node-to-node and listener endpoints: signed JSON only. */
  async function handleSigned(req: IncomingMessage, handler: (text: string) => Promise<Record<string, unknown>>): Promise<Reply> {
    const body = await readBody(req, config.maxBodyBytes * 16);
    if (!authOf(req, body).signed) {
      throw new SyncmeshError('EDGE_SYNCMESH_UNAUTHORIZED', `${routeOf(req.url)} accepts only requests signed with the mesh secret`);
    }
    return { status: 200, body: await handler(body.toString('utf8')) };
  }

  async function ready(): Promise<Reply> {
    try {
      await client.db('admin').command({ ping: 1 }, { timeoutMS: READY_PING_TIMEOUT_MS });
      return { status: 200, body: { status: 'ready', node: config.nodeId } };
    } catch (err) {
      return { status: 503, body: { status: 'not ready', node: config.nodeId, reason: `MongoDB does not answer: ${(err as Error).message}` } };
    }
  }

  async function route(req: IncomingMessage): Promise<Reply> {
    const path = routeOf(req.url);
    const method = req.method ?? 'GET';
    if (path === '/healthz') return { status: 200, body: { status: 'alive', node: config.nodeId } };
    if (path === '/readyz') return ready();
    if (path === '/') {
      if (method !== 'POST') {
        throw new SyncmeshError('EDGE_SYNCMESH_METHOD', `${method} is not supported here; send the query with POST`, { details: { allowed: ['POST'] } });
      }
      return handleQuery(req);
    }
    if (method === 'POST' && path === '/events') return handleSigned(req, (t) => replication.handleEvents(t));
    if (method === 'POST' && path === '/resync') return handleSigned(req, (t) => replication.handleResync(t));
    if (method === 'POST' && path === '/replicate') return handleSigned(req, (t) => replication.handleReplicate(t));
    throw new SyncmeshError('EDGE_SYNCMESH_NOT_FOUND', `no endpoint at ${method} ${path}`, {
      details: { allowed: ['POST /', 'GET /healthz', 'GET /readyz', 'POST /events', 'POST /resync', 'POST /replicate'] },
    });
  }

  const server = createServer((req, res) => {
    const started = performance.now();
    route(req)
      .catch((err: unknown) => {
        const { status, error } = errorBody(err, httpLog);
        return { status, body: { errors: [error] } } satisfies Reply;
      })
      .then(async (reply) => {
        // Stop reading a body we refused half-way; the client gets the answer and a closed connection.
        if (!req.complete) res.setHeader('connection', 'close');
        await send(req, res, reply);
        httpLog.debug({ method: req.method, path: routeOf(req.url), status: reply.status, ms: Math.round(performance.now() - started) }, 'request');
      })
      .catch((err: unknown) => {
        httpLog.error({ err }, 'cannot send the response');
        res.destroy();
      });
  });
  server.requestTimeout = config.deadlineMs + 30_000;
  return { config, server, service, registry, replication };
}
