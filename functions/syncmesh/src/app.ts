/**
 * Builds the function's HTTP server without listening (main.ts listens). of-watchdog's http
 * mode proxies every path under /function/<name>/ to it; the same server runs standalone on
 * local mesh nodes, so both `/` and `/function/<name>` reach the query endpoint.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gunzip as gunzipCb, gzip as gzipCb } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type { MongoClient } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import { hasSignatureHeaders, type Pending } from '@syncmesh-edge/mesh-auth';
import { PendingAnswers } from './answers.js';
import type { Config } from './config.js';
import { SyncmeshError } from './errors.js';
import { NodeRegistry } from './mesh/registry.js';
import { MeshAuth } from './mesh/signing.js';
import { parseEnvelope } from './request.js';
import { SDL_FILES } from './graphql/schema.js';
import { ReplicationService } from './replication/service.js';
import { errorBody, type Reply } from './reply.js';
import { ReadGate } from './read-gate.js';
import { assertMayRead } from './access.js';
import { FunctionMetrics, typeOfPath, type RequestLabels } from './metrics.js';
import { SyncmeshService } from './service.js';

const gzip = promisify(gzipCb);
const gunzip = promisify(gunzipCb);

/** How long /readyz waits for the database. */
const READY_PING_TIMEOUT_MS = 1_000;
/** Signed node-to-node bodies (replication batches) may be this many times SYNCMESH_MAX_BODY_BYTES. */
const SIGNED_BODY_FACTOR = 16;
/**
 * Signed bodies read at once (each up to SIGNED_BODY_FACTOR × SYNCMESH_MAX_BODY_BYTES before its
 * MAC is checked), how many more may wait for a slot, and for how long; see read-gate.ts.
 */
export const SIGNED_READS = { slots: 4, queue: 32, waitMs: 2_000 } as const;
/** How long the rest of a refused body is read (and thrown away) before the connection is closed. */
const DISCARD_TIMEOUT_MS = 10_000;

export interface AppDeps {
  config: Config;
  client: MongoClient;
  log: Logger;
  /**
   * While this returns true the process is still starting (connecting to MongoDB, creating the
   * indexes, starting replication) and /readyz answers 503. Default: never (the caller prepared
   * everything before listening).
   */
  starting?: () => boolean;
  /** Process metrics (CPU, memory, event loop) in /metrics too; main.ts turns them on. */
  processMetrics?: boolean;
}

export interface App {
  config: Config;
  server: Server;
  service: SyncmeshService;
  registry: NodeRegistry;
  replication: ReplicationService;
  auth: MeshAuth;
  /** The bound on signed bodies read at once (see SIGNED_READS). */
  signedReads: ReadGate;
  /** The Prometheus registry of GET /metrics: other modules add their metrics to it. */
  metrics: FunctionMetrics;
}

/** A verified request: who signed it (undefined = unsigned) and its decoded body. */
interface Received {
  body: Buffer;
  signedBy: string | undefined;
  version: 'v1' | 'v2' | undefined;
}

/** Path without the faasd gateway prefix (/function/<name>) and without the query string. */
export function routeOf(url: string | undefined): string {
  const path = (url ?? '/').split('?')[0]!;
  const stripped = path.replace(/^\/function\/[^/]+/, '');
  return stripped === '' ? '/' : stripped.replace(/\/+$/, '') || '/';
}

function tooLarge(maxBytes: number, what = 'the body'): SyncmeshError {
  return new SyncmeshError('EDGE_SYNCMESH_BODY_TOO_LARGE', `${what} is larger than ${maxBytes} bytes`, { details: { allowed: `at most ${maxBytes} bytes` } });
}

/** The content-encoding, checked before anything is read. */
function encodingOf(req: IncomingMessage): 'identity' | 'gzip' {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ENCODING', `content-encoding '${encoding}' is not supported`, { details: { allowed: ['identity', 'gzip'] } });
  }
  return encoding;
}

/**
 * Reads the raw body (as sent, still compressed), at most `maxBytes`. A declared length above
 * the cap is refused before reading. On refusal the stream is paused, not destroyed: the
 * server reads the rest and throws it away, so a client that sends its whole body before
 * reading (Python's urllib) gets the 413 instead of a connection reset.
 */
function readRaw(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        req.pause();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new SyncmeshError('EDGE_SYNCMESH_BAD_REQUEST', 'the request body could not be read to its end', { cause: err }));
    };
    const onAborted = () => onError(new Error('the client closed the connection'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

async function decode(raw: Buffer, encoding: 'identity' | 'gzip', maxBytes: number): Promise<Buffer> {
  if (encoding === 'identity') return raw;
  try {
    return await gunzip(raw, { maxOutputLength: maxBytes });
  } catch (err) {
    // zlib's maxOutputLength: RangeError with code ERR_BUFFER_TOO_LARGE (by code, not by message)
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(maxBytes, 'the decompressed body');
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ENCODING', 'the body is not valid gzip', { cause: err });
  }
}

/**
 * Reads and throws away what is left of a refused request, at most `maxBytes` and for at most
 * DISCARD_TIMEOUT_MS; resolves when the request ended or either bound was hit (the connection
 * is then closed, which may reset it).
 */
function discardRest(req: IncomingMessage, maxBytes: number): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', onData);
      resolve();
    };
    const onData = (c: Buffer) => {
      seen += c.length;
      if (seen > maxBytes) done();
    };
    const timer = setTimeout(done, DISCARD_TIMEOUT_MS);
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.once('error', done);
    req.resume();
  });
}

export function buildApp(deps: AppDeps): App {
  const { config, client, log } = deps;
  const registry = new NodeRegistry(client.db(config.metaDatabase));
  const auth = new MeshAuth({ secret: config.meshSecret, nodeId: config.nodeId, windowMs: config.replayWindowMs, acceptV1: config.acceptV1 });
  const replication = new ReplicationService({ config, client, registry, log: log.child({ module: 'replication' }), auth });
  const selfPort = () => (server.address() as AddressInfo | null)?.port;
  const service = new SyncmeshService({ config, client, registry, replication, log: log.child({ module: 'service' }), auth, selfPort });
  const httpLog = log.child({ module: 'http' });
  const signedReads = new ReadGate(SIGNED_READS);
  const answers = new PendingAnswers(config.maxPendingAnswerBytes, config.requestDeadlineMs);
  const metrics = new FunctionMetrics({ nodeId: config.nodeId, withDefaults: deps.processMetrics === true, log: httpLog });
  metrics.watchOutbox({
    outbox: client.db(config.metaDatabase).collection('replication_outbox'),
    subscribers: async () => (await registry.list({ subscribed: true })).filter((n) => !n.own_node).map((n) => n.id),
  });
  if (config.acceptV1)
    httpLog.warn(
      'SYNCMESH_AUTH_ACCEPT_V1 is on: deprecated v1 signatures (replayable, not bound to a node) are accepted; turn it off once every node signs v2',
    );

  /** Writes the answer; ends it at once, or after the rest of a refused body was read. */
  async function send(req: IncomingMessage, res: ServerResponse, reply: Reply): Promise<void> {
    const json = reply.raw?.text ?? JSON.stringify(reply.body);
    const acceptsGzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const headers: Record<string, string | number> = { 'content-type': reply.raw?.contentType ?? 'application/json; charset=utf-8', vary: 'accept-encoding' };
    let payload: Buffer | string = json;
    if (acceptsGzip && Buffer.byteLength(json) >= config.gzipMinBytes) {
      payload = await gzip(json);
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = Buffer.byteLength(payload);
    if (!req.complete) {
      // A refused body: answer now (a client reading early gets it at once), then read the
      // rest so that a client still sending does not see a reset, then close.
      headers['connection'] = 'close';
      res.writeHead(reply.status, headers);
      res.write(payload);
      await discardRest(req, config.maxDiscardBytes);
      res.end();
      return;
    }
    res.writeHead(reply.status, headers);
    res.end(payload);
    answers.track(res, headers['content-length']);
  }

  /** A refused signature: logged (who claims to send it, where, why; never the signature) and answered 401. */
  function refused(req: IncomingMessage, path: string, reason: string): SyncmeshError {
    const origin = req.headers['x-syncmesh-origin'];
    httpLog.warn(
      { path, claimedOrigin: typeof origin === 'string' ? origin.slice(0, 64) : undefined, remote: req.socket.remoteAddress, reason },
      'refused a mesh-signed request',
    );
    return new SyncmeshError('EDGE_SYNCMESH_UNAUTHORIZED', `bad mesh signature: ${reason}`);
  }

  /**
   * Step 1 of a signed request, before a byte of the body is read: the headers (scheme, clock,
   * target = this node, nonce not seen). Undefined for an unsigned request.
   */
  function checkSignatureHeaders(req: IncomingMessage, path: string): Pending | undefined {
    if (!hasSignatureHeaders(req.headers)) return undefined;
    if (!auth.verifier) {
      throw new SyncmeshError('EDGE_SYNCMESH_UNAUTHORIZED', 'this node has no mesh secret configured, so it cannot accept signed requests');
    }
    const verdict = auth.verifier.checkHeaders(req.method ?? 'POST', path, req.headers);
    if (!verdict.ok) throw refused(req, path, verdict.reason);
    return verdict.pending;
  }

  /** Step 2: the raw body, bounded; the MAC over it as sent (v2) before any gunzip. */
  async function receive(req: IncomingMessage, pending: Pending | undefined, maxBytes: number): Promise<Received> {
    const encoding = encodingOf(req);
    const raw = await readRaw(req, maxBytes);
    if (!pending) return { body: await decode(raw, encoding, maxBytes), signedBy: undefined, version: undefined };
    // v1 (deprecated, behind SYNCMESH_AUTH_ACCEPT_V1) signed the decompressed body.
    const body = pending.version === 'v1' ? await decode(raw, encoding, maxBytes) : raw;
    const verdict = auth.verifier!.verifyBody(pending, body);
    if (!verdict.ok) throw refused(req, routeOf(req.url), verdict.reason);
    return {
      body: pending.version === 'v1' ? body : await decode(raw, encoding, maxBytes),
      signedBy: verdict.version === 'v2' ? verdict.origin : undefined,
      version: verdict.version,
    };
  }

  async function handleQuery(req: IncomingMessage, labels: RequestLabels): Promise<Reply> {
    answers.admit();
    const pending = checkSignatureHeaders(req, '/');
    const { body, version } = await receive(req, pending, config.maxBodyBytes);
    if (version !== undefined) labels.caller = 'mesh';
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw new SyncmeshError('EDGE_SYNCMESH_BAD_JSON', `the body is not valid JSON: ${(err as Error).message}`, {
        details: { allowed: 'a JSON object {query, variables, database, collection, request_type, external_nodes, use_meta_data, radius}' },
      });
    }
    const envelope = parseEnvelope(json, config);
    labels.type = envelope.requestType;
    return service.handle(envelope, version !== undefined, req.headers['authorization']);
  }

  /** Node-to-node and listener endpoints: signed JSON only, refused before the body is read otherwise. */
  async function handleSigned(
    req: IncomingMessage,
    path: string,
    handler: (text: string, signedBy: string | undefined) => Promise<Record<string, unknown> | Reply>,
    labels: RequestLabels,
    answer: 'body' | 'reply' = 'body',
  ): Promise<Reply> {
    const pending = checkSignatureHeaders(req, path);
    if (!pending) {
      throw new SyncmeshError('EDGE_SYNCMESH_UNAUTHORIZED', `${path} accepts only requests signed with the mesh secret`);
    }
    const { body, signedBy } = await signedReads.run(() => receive(req, pending, config.maxBodyBytes * SIGNED_BODY_FACTOR));
    labels.caller = 'mesh';
    const result = await handler(body.toString('utf8'), signedBy);
    return answer === 'reply' ? (result as Reply) : { status: 200, body: result as Record<string, unknown> };
  }

  async function ready(): Promise<Reply> {
    if (deps.starting?.())
      return {
        status: 503,
        body: { status: 'not ready', node: config.nodeId, reason: 'starting: connecting to MongoDB, creating indexes, starting replication' },
      };
    try {
      await client.db('admin').command({ ping: 1 }, { timeoutMS: READY_PING_TIMEOUT_MS });
      return { status: 200, body: { status: 'ready', node: config.nodeId, replication: replication.progress() } };
    } catch (err) {
      return {
        status: 503,
        body: { status: 'not ready', node: config.nodeId, reason: `MongoDB does not answer: ${(err as Error).message}`, replication: replication.progress() },
      };
    }
  }

  /**
   * GET /metrics: Prometheus text. Open like reads (with SYNCMESH_READ_KEY set, it needs the read
   * or write key, as reads do).
   */
  async function metricsReply(req: IncomingMessage, method: string): Promise<Reply> {
    if (method !== 'GET' && method !== 'HEAD')
      throw new SyncmeshError('EDGE_SYNCMESH_METHOD', `${method} is not supported here; scrape the metrics with GET`, { details: { allowed: ['GET'] } });
    assertMayRead({ signed: false, authorization: req.headers['authorization'] }, config);
    const { contentType, text } = await metrics.render();
    return { status: 200, body: {}, raw: { contentType, text } };
  }

  async function route(req: IncomingMessage, labels: RequestLabels): Promise<Reply> {
    const path = routeOf(req.url);
    const method = req.method ?? 'GET';
    // `time`: this node's clock, so that a client can tell its offset (syncmesh status)
    if (path === '/healthz') return { status: 200, body: { status: 'alive', node: config.nodeId, time: new Date().toISOString() } };
    if (path === '/readyz') return ready();
    if (path === '/metrics') return metricsReply(req, method);
    const sdl = SDL_FILES[path];
    if (sdl !== undefined) {
      if (method !== 'GET' && method !== 'HEAD')
        throw new SyncmeshError('EDGE_SYNCMESH_METHOD', `${method} is not supported here; download the schema with GET`, { details: { allowed: ['GET'] } });
      return { status: 200, body: {}, raw: { contentType: 'text/plain; charset=utf-8', text: sdl } };
    }
    if (path === '/') {
      if (method !== 'POST') {
        throw new SyncmeshError('EDGE_SYNCMESH_METHOD', `${method} is not supported here; send the query with POST`, { details: { allowed: ['POST'] } });
      }
      return handleQuery(req, labels);
    }
    if (method === 'POST' && path === '/events') return handleSigned(req, path, (t) => replication.handleEvents(t), labels);
    if (method === 'POST' && path === '/resync') return handleSigned(req, path, (t) => replication.handleResync(t), labels);
    if (method === 'POST' && path === '/replicate') return handleSigned(req, path, (t, by) => replication.handleReplicate(t, by), labels, 'reply');
    if (method === 'POST' && path === '/replicate/status') return handleSigned(req, path, (t, by) => replication.handleStatus(t, by), labels, 'reply');
    if (method === 'POST' && path === '/replicate/digest') return handleSigned(req, path, (t, by) => replication.handleDigest(t, by), labels, 'reply');
    if (method === 'POST' && path === '/replication/check') return handleSigned(req, path, async (t) => ({ ...(await replication.handleCheck(t)) }), labels);
    throw new SyncmeshError('EDGE_SYNCMESH_NOT_FOUND', `no endpoint at ${method} ${path}`, {
      details: {
        allowed: [
          'POST /',
          'GET /healthz',
          'GET /readyz',
          'GET /metrics',
          'GET /schema.graphql',
          'GET /meta-schema.graphql',
          'POST /events',
          'POST /resync',
          'POST /replicate',
          'POST /replicate/status',
          'POST /replicate/digest',
          'POST /replication/check',
        ],
      },
    });
  }

  const server = createServer((req, res) => {
    const started = performance.now();
    const labels: RequestLabels = { type: typeOfPath(routeOf(req.url)), caller: 'client' };
    route(req, labels)
      .catch((err: unknown) => {
        const { status, error } = errorBody(err, httpLog);
        return { status, body: { errors: [error] } } satisfies Reply;
      })
      .then(async (reply) => {
        metrics.observeReply(labels, reply);
        await send(req, res, reply);
        httpLog.debug({ method: req.method, path: routeOf(req.url), status: reply.status, ms: Math.round(performance.now() - started) }, 'request');
      })
      .catch((err: unknown) => {
        httpLog.error({ err }, 'cannot send the response');
        res.destroy();
      });
  });
  server.requestTimeout = config.deadlineMs + 30_000;
  // Malformed HTTP (a bad request line or header) never reaches `route`: answer it with the same
  // JSON error shape instead of node:http's bare 400, then close.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A response already started on this socket (a refused body whose rest is being read, or a
    // pipelined request): never write a second one into it.
    const started = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (!socket.writable || err.code === 'ECONNRESET' || started) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const status = tooLarge ? 431 : timedOut ? 408 : 400;
    const json = JSON.stringify({
      errors: [
        {
          message: tooLarge
            ? 'the request headers are too large'
            : timedOut
              ? 'the request was not received completely in time'
              : `malformed HTTP request (${err.code ?? 'parse error'})`,
          extensions: { code: 'EDGE_SYNCMESH_BAD_REQUEST', allowed: 'an HTTP/1.1 POST with a JSON body' },
        },
      ],
    });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n${json}`,
    );
  });
  return { config, server, service, registry, replication, auth, signedReads, metrics };
}
