/**
 * The one shape of an HTTP error answer outside the Syncmesh function's GraphQL path: the
 * services' side endpoints (health, readiness, metrics, status) and the MISO SDK's function
 * runtime. Loads no logger (pino), so a function image that bundles it stays small.
 */
import type { ServerResponse } from 'node:http';

/**
 * Answers an HTTP request with the services' one error shape, the function's GraphQL envelope:
 * `{"errors":[{"message","extensions":{"code","allowed"}}]}`.
 */
export function replyError(res: ServerResponse, status: number, code: string, message: string, allowed?: unknown): void {
  const text = JSON.stringify({ errors: [{ message, extensions: { code, ...(allowed === undefined ? {} : { allowed }) } }] });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/** Answers with a JSON body (the side endpoints' successful answers). */
export function replyJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}
