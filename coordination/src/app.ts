/**
 * The worker's HTTP endpoint (ASYNC_WORKER_STATUS_ADDR): GET /healthz (alive), /readyz
 * (consuming), /status/<call-id> (the call's status as JSON; 400 for a malformed ID, 404 for an
 * unknown one). Built without listening (main.ts listens).
 */
import { createServer, type Server } from 'node:http';
import { ERROR_CODES } from './errors.js';
import { type AsyncWorker, CALL_ID } from './worker.js';

function json(res: import('node:http').ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function buildStatusServer(worker: Pick<AsyncWorker, 'status' | 'ready'>): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://worker');
    if (req.method !== 'GET') return json(res, 405, { error: 'only GET' });
    if (url.pathname === '/healthz') return json(res, 200, { ok: true });
    if (url.pathname === '/readyz') return json(res, worker.ready ? 200 : 503, { ready: worker.ready });
    if (url.pathname.startsWith('/status/')) {
      const id = decodeURIComponent(url.pathname.slice('/status/'.length));
      if (!CALL_ID.test(id)) {
        return json(res, 400, {
          code: ERROR_CODES.BAD_CALL_ID,
          error: `call id ${JSON.stringify(id.slice(0, 64))} is malformed`,
          allowed: '1 to 128 letters, digits, _ or - (the X-Call-Id the gateway answered)',
        });
      }
      worker.status(id).then(
        (s) =>
          s ? json(res, 200, s) : json(res, 404, { code: ERROR_CODES.UNKNOWN_CALL, error: `no call ${id} (unknown, or older than ASYNC_WORKER_STATUS_TTL_S)` }),
        () => json(res, 503, { error: 'status bucket unavailable, try again' }),
      );
      return;
    }
    json(res, 404, { error: 'not found: GET /healthz, /readyz or /status/<call-id>' });
  });
}
