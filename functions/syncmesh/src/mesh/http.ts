/**
 * POSTs between nodes (fan-out calls and replication), over keep-alive `node:http` connections:
 * lighter than fetch (no web streams or per-call abort plumbing), which a fan-out to 30 nodes
 * pays 30 times; fetch's undici was the largest part of the entry node's CPU in a profile.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { promisify } from 'node:util';
import { gunzip as gunzipCb } from 'node:zlib';
import { SyncmeshError } from '../errors.js';

const gunzip = promisify(gunzipCb);

/** Larger answers are refused: a faulty node must not exhaust the entry node's memory. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** Connections to other nodes are kept open between calls. */
const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

/** The answer itself was unusable (too large, bad gzip): the peer's fault, not the connection's. */
function badAnswer(message: string, cause?: unknown): SyncmeshError {
  return new SyncmeshError('EDGE_SYNCMESH_PEER_BAD_ANSWER', message, cause === undefined ? {} : { cause });
}

/** No answer: the connection failed, or the call was aborted (its timeout or the request's deadline). */
function unreachable(message: string, cause?: unknown): SyncmeshError {
  return new SyncmeshError('EDGE_SYNCMESH_PEER_UNREACHABLE', message, cause === undefined ? {} : { cause });
}

export interface PostOptions {
  /** Connect to this address instead of resolving the URL's host again (the one that was checked). */
  address?: { address: string; family: 4 | 6 };
}

export interface Reply {
  status: number;
  text: string;
  /** Bytes received (compressed size when gzipped). */
  bytes: number;
}

/**
 * A kept-alive connection can be dead without this node having seen it close (a peer restarted
 * behind a link emulator or a NAT that dropped the close): the first byte sent on it is answered
 * with a reset. Such a failure, on a reused connection and before any answer byte, is retried once
 * on a new connection: the peer never read the call. Nodes' calls are reads or idempotent
 * (replication events carry ids), so a retry cannot apply anything twice.
 */
const STALE_CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE']);

/** POSTs `payload` and reads the whole answer, gunzipped when it says so. `signal` aborts it. */
export function post(url: string, payload: Buffer, headers: Record<string, string>, signal: AbortSignal, opts: PostOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const client = u.protocol === 'https:' ? https : http;
    const agent = agents[u.protocol as keyof typeof agents];
    if (!agent) {
      reject(unreachable(`unsupported URL scheme '${u.protocol}'`));
      return;
    }
    const pinned = opts.address;
    const lookup = pinned ? pinnedLookup(pinned) : undefined;
    const attempt = (mayRetry: boolean) => {
      let answered = false;
      const req = client.request(
        u,
        { method: 'POST', agent, signal, ...(lookup ? { lookup } : {}), headers: { ...headers, 'content-length': String(payload.length) } },
        (res) => {
          answered = true;
          const chunks: Buffer[] = [];
          let received = 0;
          res.on('data', (c: Buffer) => {
            received += c.length;
            if (received > MAX_ANSWER_BYTES) {
              req.destroy(badAnswer(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`));
              return;
            }
            chunks.push(c);
          });
          res.on('error', (err) => reject(err instanceof SyncmeshError ? err : unreachable('the answer broke off', err)));
          res.on('end', () => {
            const raw = Buffer.concat(chunks);
            const gzipped = /\bgzip\b/.test(String(res.headers['content-encoding'] ?? ''));
            (gzipped ? gunzip(raw, { maxOutputLength: MAX_ANSWER_BYTES }) : Promise.resolve(raw)).then(
              (body) => resolve({ status: res.statusCode ?? 0, text: body.toString('utf8'), bytes: raw.length }),
              (err: Error) =>
                reject(badAnswer(err instanceof RangeError ? `the answer unzips to more than ${MAX_ANSWER_BYTES} bytes` : 'the answer is not valid gzip', err)),
            );
          });
        },
      );
      req.on('error', (err) => {
        const code = (err as NodeJS.ErrnoException).code ?? err.name;
        if (mayRetry && req.reusedSocket && !answered && !signal.aborted && STALE_CONNECTION_CODES.has(code)) {
          attempt(false);
          return;
        }
        reject(err instanceof SyncmeshError ? err : unreachable(`the call failed (${code})`, err));
      });
      req.end(payload);
    };
    // settles the call even if the socket gives no event after an abort mid-answer
    signal.addEventListener('abort', () => reject(unreachable('the call was aborted (timeout or deadline)', signal.reason)), { once: true });
    attempt(true);
  });
}

/** A `lookup` that always answers with the already checked address (both the single and the `all` form). */
function pinnedLookup(a: { address: string; family: 4 | 6 }): LookupFunction {
  return ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (options?.all) cb(null, [{ address: a.address, family: a.family }]);
    else cb(null, a.address, a.family);
  }) as unknown as LookupFunction;
}
