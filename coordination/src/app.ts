/**
 * The worker's HTTP endpoint (ASYNC_WORKER_STATUS_ADDR): GET /healthz (alive), /readyz
 * (consuming), /status/<call-id> (the call's status as JSON; 400 for a malformed ID, 404 for an
 * unknown one). Errors are coded JSON, as the function's: {"errors": [{"message", "extensions":
 * {"code", "allowed"}}]} (replyError, @syncmesh-edge/log/service). Built without listening
 * (main.ts listens).
 */
import { createServer, type Server } from 'node:http';
import { replyError, replyJson } from '@syncmesh-edge/log/service';
import { ERROR_CODES } from './errors.js';
import { type AsyncWorker, CALL_ID } from './worker.js';

const ROUTES = ['GET /healthz', 'GET /readyz', 'GET /status/<call-id>'];

export function buildStatusServer(worker: Pick<AsyncWorker, 'status' | 'ready'>): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://worker');
    if (req.method !== 'GET') {
      return replyError(res, 405, ERROR_CODES.METHOD, `${req.method} is not supported: the status endpoint answers GET only`, ROUTES);
    }
    if (url.pathname === '/healthz') return replyJson(res, 200, { ok: true });
    if (url.pathname === '/readyz') return replyJson(res, worker.ready ? 200 : 503, { ready: worker.ready });
    if (url.pathname.startsWith('/status/')) {
      const id = decodeURIComponent(url.pathname.slice('/status/'.length));
      if (!CALL_ID.test(id)) {
        return replyError(
          res,
          400,
          ERROR_CODES.BAD_CALL_ID,
          `call id ${JSON.stringify(id.slice(0, 64))} is malformed`,
          '1 to 128 letters, digits, _ or - (the X-Call-Id the gateway answered)',
        );
      }
      worker.status(id).then(
        (s) =>
          s ? replyJson(res, 200, s) : replyError(res, 404, ERROR_CODES.UNKNOWN_CALL, `no call ${id} (unknown, or older than ASYNC_WORKER_STATUS_TTL_S)`),
        () => replyError(res, 503, ERROR_CODES.STATUS_UNAVAILABLE, 'the status bucket is unavailable (NATS down?); try again'),
      );
      return;
    }
    replyError(res, 404, ERROR_CODES.NOT_FOUND, `no endpoint at GET ${url.pathname}`, ROUTES);
  });
}
