/**
 * The SDK service (proto/sdk.proto) on the agent's local endpoint: a unix socket or a loopback
 * TCP port, never a routable address. Requests are validated here (names, JSON) and errors are
 * mapped to gRPC statuses (status.ts); the handlers hold the logic.
 */
import type * as grpc from '@grpc/grpc-js';
import { MisoError } from '../../errors.js';
import { loadProtos } from './protos.js';
import { ERROR_CODE_HEADER, isExpected, toServiceError } from './status.js';

/** Largest OpBatchResponse the agent builds (approximately); a single larger answer goes alone. */
const BATCH_ANSWER_MAX_BYTES = 1024 * 1024;

/** Approximate encoded size of one OpResponse (its strings, UTF-16 units, plus fixed fields). */
function answerBytes(m: { value_json?: string; error_message?: string }): number {
  return 32 + (m.value_json?.length ?? 0) + (m.error_message?.length ?? 0);
}

/** Longest function, object or CRDT name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 256;

export interface CrdtValueOut {
  name: string;
  type: string;
  value_json: string;
}

export interface ReadOut {
  type: string;
  value_json: string;
  exists: boolean;
}

/**
 * Apply and Read may answer synchronously (the common case: the CRDT is local and persistence
 * is write-behind) or with a promise; they may also throw synchronously.
 */
export interface SdkHandlers {
  register(fn: string, replica: string): { node_id: string; replicas: number };
  unregister(fn: string, replica: string): { replicas: number };
  apply(fn: string, object: string, name: string, type: string, op: unknown, returnValue: boolean): string | Promise<string>;
  read(fn: string, object: string, name: string, type: string): ReadOut | Promise<ReadOut>;
  readObject(fn: string, object: string): Promise<CrdtValueOut[]>;
  delete(fn: string, object: string, name: string): Promise<number>;
  listObjects(fn: string): { function: string; object: string; crdts: CrdtValueOut[] }[];
  status(): unknown;
}

export interface SdkServiceHooks {
  /** Unexpected errors (masked for the caller) are reported here with the method name. */
  onInternalError(method: string, err: unknown): void;
  onCall?(method: string, ok: boolean): void;
}

/** Checks a name field: present, bounded, no NUL (used as a key separator). */
export function checkName(field: string, v: unknown, required = true): string {
  if (typeof v !== 'string' || (required && v.length === 0)) {
    throw new MisoError('EDGE_MISO_BAD_REQUEST', `${field} is required (a non-empty string)`);
  }
  // A UTF-16 unit is at most 3 UTF-8 bytes: short names (every hot-path name) skip the count.
  if (v.length * 3 > MAX_NAME_BYTES && Buffer.byteLength(v) > MAX_NAME_BYTES) {
    throw new MisoError('EDGE_MISO_BAD_REQUEST', `${field} is ${Buffer.byteLength(v)} bytes; the limit is ${MAX_NAME_BYTES}`);
  }
  if (v.includes('\u0000')) throw new MisoError('EDGE_MISO_BAD_REQUEST', `${field} must not contain NUL characters`);
  return v;
}

export function parseOpJson(s: string): unknown {
  if (!s) throw new MisoError('EDGE_MISO_BAD_REQUEST', 'op_json is required, e.g. {"op":"add","n":1}');
  try {
    return JSON.parse(s) as unknown;
  } catch (err) {
    throw new MisoError('EDGE_MISO_BAD_REQUEST', `op_json is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

type Req = Record<string, unknown>;
interface OpRequest {
  id: number;
  body?: 'apply' | 'read';
  apply?: Req;
  read?: Req;
}

export function addSdkService(server: grpc.Server, h: SdkHandlers, hooks: SdkServiceHooks): void {
  const unary = (method: string, fn: (r: Req) => unknown) => (call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => {
    let out: unknown;
    try {
      out = fn(call.request);
    } catch (err) {
      fail(method, err, cb);
      return;
    }
    if (out instanceof Promise) {
      out.then(
        (v) => {
          hooks.onCall?.(method, true);
          cb(null, v);
        },
        (err: unknown) => fail(method, err, cb),
      );
    } else {
      hooks.onCall?.(method, true);
      cb(null, out);
    }
  };
  const fail = (method: string, err: unknown, cb: grpc.sendUnaryData<unknown>) => {
    hooks.onCall?.(method, false);
    if (!isExpected(err)) hooks.onInternalError(method, err);
    cb(toServiceError(err));
  };
  const n = (r: Req, f: string, required = true) => checkName(f, r[f], required);

  /** Runs one Ops/OpsBatch operation and hands its answer (an OpResponse) to `send`. */
  const runOp = (r: OpRequest, send: (m: object) => void): void => {
    const id = r.id;
    const method = r.body === 'read' ? 'Read' : 'Apply';
    const ok = (v: string | ReadOut) => {
      hooks.onCall?.(method, true);
      send(typeof v === 'string' ? { id, value_json: v } : { id, type: v.type, value_json: v.value_json, exists: v.exists });
    };
    const failed = (err: unknown) => {
      hooks.onCall?.(method, false);
      if (!isExpected(err)) hooks.onInternalError(method, err);
      const e = toServiceError(err);
      send({ id, error_status: e.code, error_code: String(e.metadata?.get(ERROR_CODE_HEADER)[0] ?? ''), error_message: e.details });
    };
    let out: string | ReadOut | Promise<string | ReadOut>;
    try {
      if (r.body === 'read' && r.read) {
        const q = r.read as Req;
        out = h.read(n(q, 'function'), n(q, 'object'), n(q, 'name'), n(q, 'type', false));
      } else if (r.body === 'apply' && r.apply) {
        const q = r.apply as Req;
        out = h.apply(n(q, 'function'), n(q, 'object'), n(q, 'name'), n(q, 'type'), parseOpJson(String(q['op_json'] ?? '')), q['return_value'] === true);
      } else {
        throw new MisoError('EDGE_MISO_BAD_REQUEST', 'an Ops request needs apply or read');
      }
    } catch (err) {
      failed(err);
      return;
    }
    if (out instanceof Promise) out.then(ok, failed);
    else ok(out);
  };

  server.addService(loadProtos().sdk.service, {
    Register: unary('Register', (r) => h.register(n(r, 'function'), n(r, 'replica'))),
    Unregister: unary('Unregister', (r) => h.unregister(n(r, 'function'), n(r, 'replica'))),
    Apply: unary('Apply', (r) => {
      const v = h.apply(n(r, 'function'), n(r, 'object'), n(r, 'name'), n(r, 'type'), parseOpJson(String(r['op_json'] ?? '')), r['return_value'] === true);
      return typeof v === 'string' ? { value_json: v } : v.then((value_json) => ({ value_json }));
    }),
    Read: unary('Read', (r) => h.read(n(r, 'function'), n(r, 'object'), n(r, 'name'), n(r, 'type', false))),
    ReadObject: unary('ReadObject', (r) => h.readObject(n(r, 'function'), n(r, 'object')).then((crdts) => ({ crdts }))),
    Delete: unary('Delete', (r) => h.delete(n(r, 'function'), n(r, 'object'), n(r, 'name', false)).then((deleted) => ({ deleted }))),
    ListObjects: unary('ListObjects', (r) => ({ objects: h.listObjects(n(r, 'function', false)) })),
    Status: unary('Status', () => h.status()),
    Ops: (call: grpc.ServerDuplexStream<OpRequest, unknown>) => {
      // The hot path: one message per op each way. Handlers usually answer synchronously, so
      // the reply is written in the same turn, without a promise per op.
      const send = (m: object) => {
        if (!call.cancelled && call.writable) call.write(m);
      };
      call.on('data', (r: OpRequest) => runOp(r, send));
      call.on('end', () => call.end());
      call.on('error', () => call.end());
    },
    OpsBatch: (call: grpc.ServerDuplexStream<{ ops: OpRequest[] }, unknown>) => {
      // The answers of a batch that are ready at once (usually all) go out as one message right
      // after it; answers that come later go out together with whatever settles in the same turn.
      let out: object[] = [];
      let inBatch = false;
      const flush = () => {
        if (out.length === 0) return;
        const all = out;
        out = [];
        if (call.cancelled || !call.writable) return;
        // Answers can be much larger than the ops (reads of big sets): several messages, each
        // well under the message limit, unless one answer alone is larger.
        let results: object[] = [];
        let size = 0;
        for (const m of all) {
          const bytes = answerBytes(m);
          if (results.length > 0 && size + bytes > BATCH_ANSWER_MAX_BYTES) {
            call.write({ results });
            results = [];
            size = 0;
          }
          results.push(m);
          size += bytes;
        }
        call.write({ results });
      };
      const send = (m: object) => {
        if (out.push(m) === 1 && !inBatch) queueMicrotask(flush);
      };
      call.on('data', (b: { ops: OpRequest[] }) => {
        inBatch = true;
        try {
          for (const r of b.ops) runOp(r, send);
        } finally {
          inBatch = false;
        }
        flush();
      });
      call.on('end', () => call.end());
      call.on('error', () => call.end());
    },
  });
}

/** gRPC address of the SDK endpoint: unix:<path> or a loopback host:port (anything else is refused). */
export function sdkBindAddress(socket: string): string {
  if (socket.startsWith('unix:')) return socket;
  if (socket.startsWith('/') || socket.startsWith('.')) return `unix:${socket}`;
  const m = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\]):(\d+)$/.exec(socket);
  if (!m) {
    throw new MisoError('EDGE_MISO_CONFIG', `MISO_SDK_SOCKET=${socket} is neither a unix socket path nor a loopback host:port; the SDK endpoint is local only`);
  }
  return socket;
}
