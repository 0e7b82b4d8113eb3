/**
 * Optional HTTP endpoints for the container's health checks, on LISTENER_HEALTH_ADDR:
 *   GET /healthz  200 while the process runs (liveness)
 *   GET /readyz   200 when every stream is streaming and the function acknowledges (readiness),
 *                 503 with the per-collection states otherwise
 *   GET /stats    per-collection counters (JSON)
 * Built here, started by main.ts (build and listen are separate).
 */
import { createServer, type Server } from 'node:http';
import type { CollectionStats } from './listener.js';

export function createHealthServer(stats: () => CollectionStats[]): Server {
  return createServer((req, res) => {
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method !== 'GET') return send(405, { error: 'only GET' });
    switch (req.url) {
      case '/healthz':
        return send(200, { alive: true });
      case '/readyz': {
        const s = stats();
        const ready = s.every((c) => c.streamState === 'streaming' && c.deliveryState === 'delivering');
        return send(ready ? 200 : 503, { ready, collections: s.map(({ ns, streamState, deliveryState }) => ({ ns, streamState, deliveryState })) });
      }
      case '/stats':
        return send(200, { collections: stats() });
      default:
        return send(404, { error: `no route ${req.url}` });
    }
  });
}

/** Splits "host:port" (port 0 picks a free one). */
export function parseAddr(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(':');
  return { host: addr.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(addr.slice(i + 1)) };
}
