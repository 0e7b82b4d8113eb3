/**
 * The HTTP client that hands events to the Syncmesh function. One call = one attempt with a
 * deadline; retrying is the caller's job (listener.ts), deciding is classify.ts's.
 *
 *   POST {functionUrl}/events   {"source":{"node":...},"events":[...]}   -> 2xx {"applied": n}
 *   POST {functionUrl}/resync   {"db","coll","reason"}                   -> 2xx
 *
 * Bodies are relaxed EJSON (ObjectId, Date survive), signed with protocol v2 of
 * @syncmesh-edge/mesh-auth for the function's node id (lib/mesh-auth/README.md): method, path,
 * origin, target, timestamp, a fresh nonce and the body, so a captured delivery can be neither
 * replayed nor sent to another endpoint or node.
 */
import { BSON } from 'mongodb';
import { MeshKeys, signV2 } from '@syncmesh-edge/mesh-auth';
import { classifyError } from './classify.js';
import { squashError } from '@syncmesh-edge/log';
import { DeliveryError, ERROR_CODES } from './errors.js';
import type { ChangeEnvelope, ResyncReason } from './events.js';

/** How much of a rejection's body is kept for the log line and the dead letter. */
const MAX_ERROR_BODY_CHARS = 2_000;

export interface FunctionClientOptions {
  functionUrl: string;
  meshSecret: string;
  /** This node's id: `source.node` and the signature's origin. */
  nodeId: string;
  /** The function's node id (the signature's target); defaults to `nodeId`. */
  functionNodeId?: string;
  timeoutMs: number;
}

export interface ResyncRequest {
  db: string;
  coll: string;
  reason: ResyncReason;
}

export interface DeliveryResult {
  status: number;
  /** What the function says it applied; undefined when the 2xx body did not say. */
  applied: number | undefined;
}

export interface FunctionClient {
  postEvents(events: readonly ChangeEnvelope[], signal?: AbortSignal): Promise<DeliveryResult>;
  postResync(req: ResyncRequest, signal?: AbortSignal): Promise<DeliveryResult>;
}

/** Serialises a delivery exactly as it travels (exported for tests and the stand-in). */
export function encodeEvents(nodeId: string, events: readonly ChangeEnvelope[]): string {
  return BSON.EJSON.stringify({ source: { node: nodeId }, events }, { relaxed: true });
}

/** Extracts the function's own message from an error body (JSON `error`/`message`, else text). */
function messageOf(text: string): string {
  try {
    const j: unknown = JSON.parse(text);
    if (typeof j === 'object' && j !== null) {
      const o = j as Record<string, unknown>;
      for (const k of ['error', 'message', 'errors']) {
        if (o[k] !== undefined) return (typeof o[k] === 'string' ? o[k] : JSON.stringify(o[k])).slice(0, MAX_ERROR_BODY_CHARS);
      }
    }
  } catch (err) {
    squashError(err); // not JSON: the text itself is the message
  }
  return text.slice(0, MAX_ERROR_BODY_CHARS);
}

export function createFunctionClient(opts: FunctionClientOptions): FunctionClient {
  const keys = new MeshKeys(opts.meshSecret);
  const target = opts.functionNodeId ?? opts.nodeId;
  async function post(path: '/events' | '/resync', body: string, signal?: AbortSignal): Promise<DeliveryResult> {
    const url = `${opts.functionUrl}${path}`;
    const deadline = AbortSignal.timeout(opts.timeoutMs);
    const combined = signal ? AbortSignal.any([deadline, signal]) : deadline;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signV2(keys, { method: 'POST', path, origin: opts.nodeId, target, body }) },
        body,
        signal: combined,
      });
      text = await res.text();
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const why = deadline.aborted
        ? `no answer within ${opts.timeoutMs} ms`
        : `${(err as Error).message}${(err as { cause?: { code?: string } }).cause?.code ? ` (${(err as { cause: { code: string } }).cause.code})` : ''}`;
      throw new DeliveryError(ERROR_CODES.DELIVERY_FAILED, `POST ${url} failed: ${why}`, undefined, { cause: err });
    }
    if (res.status >= 200 && res.status < 300) {
      let applied: number | undefined;
      try {
        const j = JSON.parse(text) as { applied?: unknown };
        if (typeof j.applied === 'number') applied = j.applied;
      } catch (err) {
        squashError(err); // a 2xx acknowledges the batch even without a body saying how much was applied
      }
      return { status: res.status, applied };
    }
    const message = `POST ${url} answered ${res.status}: ${messageOf(text)}`;
    const failed = new DeliveryError(ERROR_CODES.DELIVERY_FAILED, message, res.status);
    // The code follows the one classifier: only answers it rejects for good are "rejected".
    throw classifyError(failed).action === 'reject' ? new DeliveryError(ERROR_CODES.DELIVERY_REJECTED, message, res.status) : failed;
  }

  return {
    postEvents(events, signal) {
      return post('/events', encodeEvents(opts.nodeId, events), signal);
    },
    postResync(req, signal) {
      return post('/resync', BSON.EJSON.stringify({ db: req.db, coll: req.coll, reason: req.reason }, { relaxed: true }), signal);
    },
  };
}
