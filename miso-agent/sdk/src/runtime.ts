/**
 * The function server for Node functions on OpenFaaS (of-watchdog "http" mode): it calls the
 * handler with the node20 template's (event, context) contract, adds
 * `context.statefulObject`, and registers this function replica with the node's MISO agent at
 * start-up and unregisters it at shutdown, so user code never does either.
 *
 * The object a request works on: header `X-Miso-Object`, else query `?object=`, else
 * MISO_DEFAULT_OBJECT ("default").
 *
 * Every error answer, the runtime's own and a handler's `context.fail`, is the project's one
 * coded JSON error (`{"errors":[{"message","extensions":{"code","allowed"}}]}`, lib/log's
 * replyError; each code a row in docs/errors.md): 400 for input that cannot be read, 413 for a
 * body over the limit, 502/503 when the agent cannot be reached, 500 (without the error's text or
 * stack, which go to the function's log) for a handler that threw.
 */
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { replyError } from '@syncmesh-edge/log/http';
import { MisoClient } from './client.js';
import { loadSdkConfig, type SdkConfig } from './config.js';
import { MisoSdkError } from './errors.js';
import { StatefulObject } from './stateful-object.js';

/** Largest request body accepted (the node20 template's default MAX_RAW_SIZE is 100 kB). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** How long start-up waits for the agent before failing (the container is then restarted). */
export const AGENT_WAIT_MS = 15_000;
/** Label that connects a function to its node's agent on a Syncmesh Edge node (faasd patch 0008). */
export const MISO_LABEL = 'com.syncmesh.miso=true';

/**
 * Why this replica has no agent, or undefined when it may have one: the agent's unix socket is
 * missing. Without its folder (/run/miso) the platform did not connect the function at all (on
 * faasd: deployed without the label); with the folder but no socket, the agent did not open it.
 */
export function missingAgent(socket: string): string | undefined {
  const path = socket.startsWith('unix:') ? socket.slice('unix:'.length) : socket;
  if (!path.startsWith('/') || existsSync(path)) return undefined;
  if (!existsSync(dirname(path))) {
    return `no MISO agent socket at ${path}: this function is not connected to its node's MISO agent; deploy it with the label ${MISO_LABEL} (faas-cli deploy --label ${MISO_LABEL}, or labels: in stack.yml)`;
  }
  return `no MISO agent socket at ${path}: the node's MISO agent has not opened this function's socket (is the agent running? its log says why)`;
}

/** Shutdown deadline for in-flight requests. */
export const SHUTDOWN_DEADLINE_MS = 5_000;

export interface FunctionEvent {
  body: unknown;
  headers: IncomingMessage['headers'];
  method: string;
  query: Record<string, string>;
  path: string;
}

export interface FunctionContext {
  statefulObject: StatefulObject;
  status(code: number): FunctionContext;
  headers(h: Record<string, string>): FunctionContext;
  succeed(value: unknown): FunctionContext;
  fail(value: unknown): FunctionContext;
}

export type Handler = (event: FunctionEvent, context: FunctionContext) => unknown;

export interface ServeOptions {
  port?: number;
  host?: string;
  env?: Record<string, string | undefined>;
  maxBodyBytes?: number;
  /**
   * Errors thrown by the handler are reported here (default: their stack on stderr, the
   * function's log); the caller gets a coded answer without the error's text (500
   * EDGE_MISO_SDK_HANDLER_FAILED), or the MisoSdkError's code and message (400, 502).
   */
  onError?: (err: unknown) => void;
  /**
   * false: a function without MISO objects (the node20 template's contract only): no agent is
   * contacted, MISO_FUNCTION is not needed, and `context.statefulObject` throws
   * EDGE_MISO_SDK_NOT_CONNECTED. Default true.
   */
  agent?: boolean;
}

export interface FunctionServer {
  readonly port: number;
  readonly config: SdkConfig;
  readonly client: MisoClient;
  /** Set when the replica has no agent: every invocation answers 503 EDGE_MISO_SDK_NOT_CONNECTED. */
  readonly notConnected: string | undefined;
  close(): Promise<void>;
}

class Context implements FunctionContext {
  statusCode = 200;
  headerValues: Record<string, string> = {};
  result: unknown = undefined;
  failed: unknown = undefined;
  done = false;
  constructor(readonly statefulObject: StatefulObject) {}
  status(code: number): this {
    this.statusCode = code;
    return this;
  }
  headers(h: Record<string, string>): this {
    this.headerValues = h;
    return this;
  }
  succeed(value: unknown): this {
    this.result = value;
    this.done = true;
    return this;
  }
  fail(value: unknown): this {
    this.failed = value;
    this.done = true;
    return this;
  }
}

/** A refused request: the status and the coded error the runtime answers with. */
class Refused {
  constructor(
    readonly status: number,
    readonly error: MisoSdkError,
    readonly allowed?: unknown,
  ) {}
}

function tooLarge(max: number, what: string): Refused {
  return new Refused(
    413,
    new MisoSdkError('EDGE_MISO_SDK_BODY_TOO_LARGE', `${what} is larger than this function's limit of ${max} bytes`),
    `a body of at most ${max} bytes`,
  );
}

/**
 * The request's body, at most `max` bytes: a larger declared Content-Length is refused before
 * reading, a larger streamed one as soon as it passes the limit (the rest is discarded until the
 * connection closes after the 413).
 */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > max) {
      reject(tooLarge(max, `the request body (Content-Length ${declared})`));
      return;
    }
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      if (n > max) return; // refused already: discarded
      n += c.length;
      if (n > max) {
        chunks.length = 0;
        reject(tooLarge(max, 'the request body'));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The parsed body: JSON for a JSON Content-Type (400 when it is not JSON), else the text. */
function parseBody(req: IncomingMessage, raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (!(req.headers['content-type'] ?? '').includes('application/json') || text.length === 0) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Refused(
      400,
      new MisoSdkError('EDGE_MISO_SDK_BAD_JSON', `the body is not valid JSON although its Content-Type is application/json: ${(err as Error).message}`),
      'a JSON document, or a body sent with another Content-Type (text/plain), which the handler gets as text',
    );
  }
}

/**
 * The HTTP status of a MisoSdkError a handler let through: 400 when the agent refused the
 * operation's input (INVALID_ARGUMENT: an object or CRDT name too long, a value too large, both
 * usually from the request), 503 when the function has no agent (served with `agent: false`),
 * else 502 (the agent could not be reached, did not answer in time, or refused for another
 * reason; its code says which).
 */
export function httpStatusOf(err: MisoSdkError): number {
  if (err.grpcCode === grpcStatus.INVALID_ARGUMENT) return 400;
  return err.code === 'EDGE_MISO_SDK_NOT_CONNECTED' ? 503 : 502;
}

/** A handler's `context.fail(value)` as a coded error: a message, an Error, or `{ message, code?, allowed? }`. */
function failure(value: unknown, status: number): { code: string; message: string; allowed?: unknown } {
  const fallback = status < 500 ? 'EDGE_MISO_SDK_REFUSED' : 'EDGE_MISO_SDK_HANDLER_FAILED';
  if (typeof value === 'string') return { code: fallback, message: value };
  if (value && typeof value === 'object') {
    const v = value as { code?: unknown; message?: unknown; allowed?: unknown };
    if (typeof v.message === 'string') {
      return { code: typeof v.code === 'string' && v.code ? v.code : fallback, message: v.message, ...(v.allowed === undefined ? {} : { allowed: v.allowed }) };
    }
  }
  return { code: fallback, message: JSON.stringify(value) ?? String(value) };
}

function defaultOnError(err: unknown): void {
  process.stderr.write(`handler failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
}

/** The statefulObject of a function served without an agent: every use is a clear error. */
function noObjects(): StatefulObject {
  return new Proxy({} as StatefulObject, {
    get() {
      throw new MisoSdkError(
        'EDGE_MISO_SDK_NOT_CONNECTED',
        'this function is served without a MISO agent (agent: false); build it from the miso-node20 template and deploy it with the label com.syncmesh.miso=true',
      );
    },
  });
}

/** Starts the function server: registers with the agent, then listens. */
export async function serveFunction(handler: Handler, opts: ServeOptions = {}): Promise<FunctionServer> {
  const env = opts.env ?? process.env;
  const stateless = opts.agent === false;
  const config = loadSdkConfig(stateless ? { MISO_FUNCTION: 'stateless', ...env } : env);
  // Concurrent invocations share this client: their operations of one turn go in one message.
  const client = new MisoClient(config.socket, config.deadlineMs, 'batch');
  // A replica the platform did not connect to an agent still serves, and answers every
  // invocation with why (instead of failing every call after a deadline, or exiting).
  const socketPath = config.socket.startsWith('unix:') ? config.socket.slice('unix:'.length) : config.socket;
  const socketDir = socketPath.startsWith('/') ? dirname(socketPath) : undefined;
  let notConnected = socketDir && !existsSync(socketDir) ? missingAgent(config.socket) : undefined;
  if (!notConnected && !stateless) {
    try {
      await client.waitForReady(AGENT_WAIT_MS);
      await client.register(config.fn, config.replica);
    } catch (err) {
      notConnected = missingAgent(config.socket);
      if (!notConnected) throw err;
    }
  }
  if (notConnected && !stateless) process.stderr.write(`EDGE_MISO_SDK_NOT_CONNECTED: ${notConnected}\n`);
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const onError = opts.onError ?? defaultOnError;

  /** Answers one invocation; throws a Refused for input it does not take, or the handler's error. */
  const invoke = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://function');
    if (url.pathname === '/_/health') {
      res.writeHead(200).end('OK');
      return;
    }
    if (notConnected && !stateless) {
      req.resume();
      replyError(res, 503, 'EDGE_MISO_SDK_NOT_CONNECTED', notConnected);
      return;
    }
    const body = parseBody(req, await readBody(req, maxBody));
    const objectHeader = req.headers['x-miso-object'];
    const objectId = (Array.isArray(objectHeader) ? objectHeader[0] : objectHeader) || url.searchParams.get('object') || config.defaultObject;
    const ctx = new Context(stateless ? noObjects() : new StatefulObject(client, config.fn, objectId));
    const event: FunctionEvent = {
      body,
      headers: req.headers,
      method: req.method ?? 'GET',
      query: Object.fromEntries(url.searchParams),
      path: url.pathname,
    };
    const r = await handler(event, ctx);
    if (!ctx.done && r !== undefined) ctx.succeed(r);
    if (ctx.failed !== undefined) {
      const status = ctx.statusCode >= 400 ? ctx.statusCode : 500;
      const f = failure(ctx.failed, status);
      for (const [k, v] of Object.entries(ctx.headerValues)) res.setHeader(k, v);
      replyError(res, status, f.code, f.message, f.allowed);
      return;
    }
    const out = ctx.result;
    const isText = typeof out === 'string' || Buffer.isBuffer(out);
    const payload = isText ? out : JSON.stringify(out ?? null); // throws for a circular or BigInt answer: a 500
    res.writeHead(ctx.statusCode, { 'content-type': isText ? 'text/plain' : 'application/json', ...ctx.headerValues }).end(payload);
  };

  const server: Server = createServer((req, res) => {
    invoke(req, res).catch((err: unknown) => {
      if (err instanceof Refused) {
        // a refused body is not read further: the connection closes after the answer
        if (err.status === 413) res.setHeader('connection', 'close');
        replyError(res, err.status, err.error.code, err.error.message, err.allowed);
        return;
      }
      onError(err);
      if (res.headersSent) {
        res.destroy();
      } else if (err instanceof MisoSdkError) {
        replyError(res, httpStatusOf(err), err.code, err.message);
      } else {
        replyError(res, 500, 'EDGE_MISO_SDK_HANDLER_FAILED', "the function's handler failed; the error is in the function's log");
      }
    });
  });
  const port = opts.port ?? Number(env['http_port'] ?? env['PORT'] ?? 3000);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  let closing: Promise<void> | undefined;
  return {
    port: typeof addr === 'object' && addr ? addr.port : port,
    config,
    client,
    notConnected,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            server.closeAllConnections();
            resolve();
          }, SHUTDOWN_DEADLINE_MS);
          server.close(() => {
            clearTimeout(t);
            resolve();
          });
          server.closeIdleConnections();
        });
        try {
          if (!notConnected && !stateless) await client.unregister(config.fn, config.replica);
        } finally {
          client.close();
        }
      })();
      return closing;
    },
  };
}

/** serveFunction + SIGTERM/SIGINT handling: the entry point of a function image. */
export async function runFunction(handler: Handler, opts: ServeOptions = {}): Promise<FunctionServer> {
  const s = await serveFunction(handler, opts);
  const stop = () => {
    s.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`shutdown: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return s;
}
