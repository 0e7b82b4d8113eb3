/**
 * A stand-in for the Syncmesh function in plumbing tests: same env (HOST, PORT, MONGODB_URI,
 * SYNCMESH_NODE_ID), GET /readyz is 200 when the node's MongoDB accepts connections, and POST
 * answers {node, path}; a POST with {"forward": url} first calls that URL from inside the node
 * (so a test can send node A -> link -> node B).
 */
import { createServer } from 'node:http';
import { connect } from 'node:net';

const node = process.env['SYNCMESH_NODE_ID'] ?? 'unknown';
const mongo = new URL((process.env['MONGODB_URI'] ?? 'mongodb://127.0.0.1:27017/').replace(/^mongodb/, 'http'));

function mongoUp(): Promise<boolean> {
  return new Promise((resolveUp) => {
    const s = connect({ host: mongo.hostname, port: Number(mongo.port || 27017) });
    s.once('connect', () => {
      s.destroy();
      resolveUp(true);
    });
    s.once('error', () => resolveUp(false));
  });
}

const server = createServer(async (req, res) => {
  if (req.method === 'GET' && (req.url === '/readyz' || req.url === '/healthz')) {
    const ok = req.url === '/healthz' || (await mongoUp());
    res.writeHead(ok ? 200 : 503).end(ok ? 'ok' : 'mongo down');
    return;
  }
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as { forward?: string; timeoutMs?: number }) : {};
  let forwarded: unknown = null;
  if (body.forward) {
    const t0 = performance.now();
    try {
      const r = await fetch(body.forward, { method: 'POST', body: '{}', signal: AbortSignal.timeout(body.timeoutMs ?? 5_000) });
      forwarded = { ok: true, answer: await r.json(), ms: performance.now() - t0 };
    } catch (err) {
      forwarded = { ok: false, error: (err as Error).name, ms: performance.now() - t0 };
    }
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ node, path: req.url, forwarded }));
});

server.listen(Number(process.env['PORT'] ?? 8080), process.env['HOST'] ?? '0.0.0.0');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
