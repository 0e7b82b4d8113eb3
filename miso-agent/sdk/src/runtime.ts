/**
 * The function server for Node functions on OpenFaaS (of-watchdog "http" mode): it calls the
 * handler with the node20 template's (event, context) contract, adds
 * `context.statefulObject`, and registers this function replica with the node's MISO agent at
 * start-up and unregisters it at shutdown, so user code never does either.
 *
 * The object a request works on: header `X-Miso-Object`, else query `?object=`, else
 * MISO_DEFAULT_OBJECT ("default").
 */
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { dirname } from 'node:path';
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
  /** Errors thrown by the handler are reported here (the caller sees a generic 500). */
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

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) {
        reject(new MisoSdkError('EDGE_MISO_SDK_BODY_TOO_LARGE', `request body exceeds ${max} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
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

  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://function');
      if (url.pathname === '/_/health') {
        res.writeHead(200).end('OK');
        return;
      }
      if (notConnected && !stateless) {
        req.resume();
        res.writeHead(503, { 'content-type': 'application/json' }).end(`${JSON.stringify({ code: 'EDGE_MISO_SDK_NOT_CONNECTED', message: notConnected })}\n`);
        return;
      }
      let raw: Buffer;
      try {
        raw = await readBody(req, maxBody);
      } catch (err) {
        res.writeHead(413, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`);
        return;
      }
      const text = raw.toString('utf8');
      let body: unknown = text;
      if ((req.headers['content-type'] ?? '').includes('application/json') && text.length > 0) {
        try {
          body = JSON.parse(text) as unknown;
        } catch {
          // Not JSON despite the header: the handler gets the raw text, as the node20 template does.
          body = text;
        }
      }
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
      try {
        const r = await handler(event, ctx);
        if (!ctx.done && r !== undefined) ctx.succeed(r);
      } catch (err) {
        opts.onError?.(err);
        const known = err instanceof MisoSdkError;
        res.writeHead(known ? 502 : 500, { 'content-type': 'text/plain' }).end(known ? `${err.code}: ${err.message}\n` : 'internal error\n');
        return;
      }
      if (ctx.failed !== undefined) {
        res.writeHead(ctx.statusCode >= 400 ? ctx.statusCode : 500, { 'content-type': 'text/plain', ...ctx.headerValues }).end(String(ctx.failed));
        return;
      }
      const out = ctx.result;
      const isText = typeof out === 'string' || Buffer.isBuffer(out);
      res
        .writeHead(ctx.statusCode, { 'content-type': isText ? 'text/plain' : 'application/json', ...ctx.headerValues })
        .end(isText ? out : JSON.stringify(out ?? null));
    })();
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
