/**
 * A real HTTP server that stands in for the Syncmesh function's replication endpoints in tests
 * and benchmarks: it verifies the mesh signature, records every delivery and resync request,
 * and can be switched to fail (503), hang, reject (400) or go down and come back on its port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { BSON } from 'mongodb';
import { MeshKeys, Verifier } from '@syncmesh-edge/mesh-auth';
import type { ChangeEnvelope, ResyncReason } from '../events.js';
import { waitUntil } from './harness.js';

/** `reject-events`: 400 for /events only (a batch the function cannot take; a resync still works). */
export type StandInMode = 'ok' | 'fail' | 'hang' | 'reject' | 'reject-events';

export interface ReceivedResync {
  db: string;
  coll: string;
  reason: ResyncReason;
}

export interface FunctionStandIn {
  /** Base URL to use as SYNCMESH_FUNCTION_URL. */
  readonly url: string;
  readonly port: number;
  /** Every acknowledged event, in arrival order (duplicates kept). */
  readonly events: ChangeEnvelope[];
  readonly resyncs: ReceivedResync[];
  /** Requests answered with something other than 2xx, and requests left hanging. */
  readonly refused: number;
  /** Number of /events requests seen, acknowledged or not. */
  readonly attempts: number;
  /** Every x-syncmesh-signature value received (for the no-signatures-in-logs test). */
  readonly signatures: string[];
  /** Called with each acknowledged batch and the time it arrived (for latency measurements). */
  onEvents?: (events: ChangeEnvelope[], atMs: number) => void;
  setMode(mode: StandInMode): void;
  /** Closes the port and every open connection (the function is down). */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  /** Polls `cond` every 20 ms until true or throws after `timeoutMs`. */
  waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * `nodeId` is the function's node id the listener signs for; by default the host name, which is
 * the listener's default LISTENER_NODE_ID too.
 */
export async function startFunctionStandIn(secret: string, port = 0, nodeId: string = hostname()): Promise<FunctionStandIn> {
  const verifier = new Verifier({ keys: new MeshKeys(secret), nodeId });
  let mode: StandInMode = 'ok';
  const events: ChangeEnvelope[] = [];
  const resyncs: ReceivedResync[] = [];
  const hanging = new Set<ServerResponse>();
  let refused = 0;
  let attempts = 0;
  const signatures: string[] = [];

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const reply = (status: number, payload: unknown) => {
        if (status >= 300) refused++;
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      };
      const path = (req.url ?? '').split('?')[0]!.replace(/\/+$/, '');
      if (req.method !== 'POST' || !(path.endsWith('/events') || path.endsWith('/resync'))) return reply(404, { error: `no route ${req.method} ${req.url}` });
      if (path.endsWith('/events')) attempts++;
      const sig = req.headers['x-syncmesh-signature'];
      if (typeof sig === 'string') signatures.push(sig);
      const auth = verifier.verify('POST', path.endsWith('/events') ? '/events' : '/resync', req.headers, body);
      if (!auth.ok) return reply(401, { error: auth.reason });
      if (mode === 'fail') return reply(503, { error: 'stand-in told to fail' });
      if (mode === 'reject' || (mode === 'reject-events' && path.endsWith('/events'))) return reply(400, { error: 'stand-in told to reject' });
      if (mode === 'hang') {
        refused++;
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const parsed = BSON.EJSON.parse(body.toString('utf8'), { relaxed: true }) as Record<string, unknown>;
      if (path.endsWith('/events')) {
        const batch = parsed['events'] as ChangeEnvelope[];
        events.push(...batch);
        standIn.onEvents?.(batch, Date.now());
        return reply(200, { applied: batch.length });
      }
      resyncs.push(parsed as unknown as ReceivedResync);
      return reply(202, { accepted: true });
    });
  };

  let server: Server = createServer(handler);
  server.keepAliveTimeout = 5_000;
  const listen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const boundPort = await listen(port);
  const closeServer = () =>
    new Promise<void>((resolve) => {
      for (const r of hanging) r.destroy();
      hanging.clear();
      if (!server.listening) return resolve();
      server.close(() => resolve());
      server.closeAllConnections();
    });

  const standIn: FunctionStandIn = {
    url: `http://127.0.0.1:${boundPort}/function/syncmesh-fn`,
    port: boundPort,
    events,
    resyncs,
    signatures,
    get refused() {
      return refused;
    },
    get attempts() {
      return attempts;
    },
    setMode(m) {
      mode = m;
      if (m !== 'hang') {
        for (const r of hanging) r.destroy();
        hanging.clear();
      }
    },
    async down() {
      await closeServer();
    },
    async up() {
      server = createServer(handler);
      await listen(boundPort);
    },
    waitFor: (cond, timeoutMs, what) => waitUntil(cond, timeoutMs, what),
    close: closeServer,
  };
  return standIn;
}
