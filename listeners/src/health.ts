/**
 * Optional HTTP endpoints for the container's health checks, on LISTENER_HEALTH_ADDR:
 *   GET /healthz  200 while the process runs (liveness)
 *   GET /readyz   200 when every stream is streaming and the function acknowledges (readiness),
 *                 503 with the per-collection states otherwise
 *   GET /stats    per-collection counters (JSON)
 *   GET /metrics  Prometheus metrics (metrics.ts), when a registry is given
 * Errors are coded JSON, as the function's: {"errors": [{"message", "extensions": {"code", "allowed"}}]}
 * (replyError, @syncmesh-edge/log/service).
 * Built here, started by main.ts (build and listen are separate).
 */
import { createServer, type Server } from 'node:http';
import { replyError, replyJson } from '@syncmesh-edge/log/service';
import { ERROR_CODES } from './errors.js';
import type { CollectionStats } from './listener.js';
import type { ListenerMetrics } from './metrics.js';

const ROUTES = ['GET /healthz', 'GET /readyz', 'GET /stats', 'GET /metrics'];

export function createHealthServer(stats: () => CollectionStats[], metrics?: ListenerMetrics): Server {
  return createServer((req, res) => {
    const send = (status: number, body: unknown) => replyJson(res, status, body);
    const error = (status: number, code: string, message: string) => replyError(res, status, code, message, ROUTES);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return error(405, ERROR_CODES.METHOD, `${req.method} is not supported: the health endpoints answer GET only`);
    switch (path) {
      case '/healthz':
        return send(200, { alive: true });
      case '/readyz': {
        const s = stats();
        const ready = s.every((c) => c.streamState === 'streaming' && c.deliveryState === 'delivering');
        return send(ready ? 200 : 503, { ready, collections: s.map(({ ns, streamState, deliveryState }) => ({ ns, streamState, deliveryState })) });
      }
      case '/stats':
        return send(200, { collections: stats() });
      case '/metrics':
        if (!metrics) return error(404, ERROR_CODES.NOT_FOUND, 'this listener serves no metrics');
        return void metrics.render().then(
          ({ contentType, text }) => res.writeHead(200, { 'content-type': contentType }).end(text),
          (err: unknown) => error(500, ERROR_CODES.INTERNAL, `the metrics could not be collected: ${(err as Error).message}`),
        );
      default:
        return error(404, ERROR_CODES.NOT_FOUND, `no endpoint at GET ${path}`);
    }
  });
}

/** Splits "host:port" (port 0 picks a free one). */
export function parseAddr(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(':');
  return { host: addr.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(addr.slice(i + 1)) };
}
