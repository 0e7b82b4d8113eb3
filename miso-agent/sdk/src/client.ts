/**
 * gRPC client of the node's MISO agent (proto/sdk.proto of miso-agent). Every call has a
 * deadline; failures become MisoSdkError with the agent's stable code.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { MisoSdkError } from './errors.js';

const here = dirname(fileURLToPath(import.meta.url));

/** sdk.proto: MISO_SDK_PROTO, else miso-agent/proto next to this package (sdk/ lives in miso-agent/). */
function protoPath(): string {
  const fromEnv = process.env['MISO_SDK_PROTO'];
  if (fromEnv) return fromEnv;
  for (const up of ['../../../proto', '../../proto', '../proto']) {
    const p = resolve(here, up, 'sdk.proto');
    if (existsSync(p)) return p;
  }
  throw new MisoSdkError('EDGE_MISO_SDK_CONFIG', `sdk.proto not found near ${here}; set MISO_SDK_PROTO`);
}

let ctor: grpc.ServiceClientConstructor | undefined;
function clientCtor(): grpc.ServiceClientConstructor {
  if (ctor) return ctor;
  const p = protoPath();
  const def = protoLoader.loadSync(p, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [dirname(p)] });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { miso: { sdk: { v1: { Miso: grpc.ServiceClientConstructor } } } };
  ctor = pkg.miso.sdk.v1.Miso;
  return ctor;
}

/** gRPC target for an agent endpoint given as a path, unix:path or host:port. */
export function agentTarget(socket: string): string {
  if (socket.startsWith('unix:')) return socket;
  if (socket.startsWith('/') || socket.startsWith('.')) return `unix:${socket}`;
  return socket;
}

export interface CrdtValue {
  name: string;
  type: string;
  value: unknown;
}

export interface AgentStatus {
  node_id: string;
  replica_id: string;
  crdts: number;
  persist_pending: number;
  peers: {
    node_id: string;
    address: string;
    connected: boolean;
    functions: string[];
    bytes_sent: number;
    bytes_received: number;
    update_bytes_sent: number;
    update_messages_sent: number;
    delta_bytes_sent: number;
    messages_sent: number;
    messages_received: number;
    lag_last_ms: number;
    lag_mean_ms: number;
    unacked: number;
    last_heard_ms_ago: number;
  }[];
  /** send_last_ms / send_last_peers: the last update's encode-and-write time to all peer streams. */
  functions: { function: string; local_replicas: number; nodes: string[]; send_last_ms: number; send_last_peers: number }[];
}

type Callback<T> = (err: grpc.ServiceError | null, res?: T) => void;
type Method = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback<unknown>) => void;

interface OpResponse {
  id: number;
  value_json: string;
  type: string;
  exists: boolean;
  error_status: number;
  error_code: string;
  error_message: string;
}

interface PendingOp {
  method: string;
  deadline: number;
  resolve(r: OpResponse): void;
  reject(e: MisoSdkError): void;
}

/**
 * Largest OpsBatch message the client builds (approximately), well below the agent's
 * MISO_MAX_MESSAGE_BYTES (4 MiB by default); a single larger operation travels alone.
 */
const BATCH_MAX_BYTES = 256 * 1024;

/** How often expired stream operations are failed with EDGE_MISO_SDK_DEADLINE. */
const DEADLINE_SWEEP_MS = 50;

/**
 * How Apply and Read travel: `stream` (default) on the Ops stream, one message per operation,
 * the cheapest with one operation in flight; `batch` on the OpsBatch stream, where the
 * operations issued in one event-loop turn go in one message, the cheapest when concurrent
 * invocations share the client (runFunction uses it); `unary`, one call per operation.
 */
export type OpsTransport = 'batch' | 'stream' | 'unary';

type OpStream = grpc.ClientDuplexStream<unknown, unknown>;

export class MisoClient {
  private readonly client: grpc.Client;
  private ops: OpStream | undefined;
  private readonly pending = new Map<number, PendingOp>();
  private nextId = 1;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly transport: OpsTransport;
  /** Operations waiting for the end of this event-loop turn (batch transport), with their approximate size. */
  private queued: { op: { id: number; apply?: object; read?: object }; bytes: number }[] = [];

  /**
   * @param socket the agent's SDK endpoint
   * @param deadlineMs deadline of every call (and of every operation on the Ops streams)
   * @param transport how Apply/Read travel (see OpsTransport); `true` = `stream`, `false` = `unary`
   */
  constructor(
    socket: string,
    private readonly deadlineMs: number,
    transport: OpsTransport | boolean = 'stream',
  ) {
    this.transport = transport === true ? 'stream' : transport === false ? 'unary' : transport;
    const Ctor = clientCtor();
    this.client = new Ctor(agentTarget(socket), grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': 16 * 1024 * 1024,
      // The agent is local and every op has its own deadline; gRPC's transparent-retry layer
      // (which buffers every written message) only costs CPU on the streams' hot path.
      'grpc.enable_retries': 0,
      // No channelz (grpc-js's introspection counters on every call and message): nothing reads them.
      'grpc.enable_channelz': 0,
    });
  }

  private call<T>(method: string, req: unknown): Promise<T> {
    const m = (this.client as unknown as Record<string, Method>)[method]!.bind(this.client);
    return new Promise<T>((resolve, reject) => {
      m(req, new grpc.Metadata(), { deadline: Date.now() + this.deadlineMs }, (err, res) => {
        if (err) reject(toSdkError(method, err));
        else resolve(res as T);
      });
    });
  }

  /** Settles the pending operation an answer belongs to. */
  private settle(r: OpResponse): void {
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (r.error_status) {
      p.reject(
        new MisoSdkError(
          r.error_code || 'EDGE_MISO_SDK_UNAVAILABLE',
          `MISO ${p.method} failed (${grpc.status[r.error_status]}): ${r.error_message}`,
          r.error_status,
        ),
      );
    } else {
      p.resolve(r);
    }
  }

  /** The Ops or OpsBatch stream, opened on first use and again after it breaks. */
  private stream(): OpStream {
    if (this.ops) return this.ops;
    const batch = this.transport === 'batch';
    const s = (this.client as unknown as Record<'Ops' | 'OpsBatch', () => OpStream>)[batch ? 'OpsBatch' : 'Ops']();
    this.ops = s;
    if (batch) {
      s.on('data', (b: { results: OpResponse[] }) => {
        for (const r of b.results) this.settle(r);
      });
    } else {
      s.on('data', (r: OpResponse) => this.settle(r));
    }
    const broken = (why: string, code: number) => {
      if (this.ops !== s) return;
      this.ops = undefined;
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(new MisoSdkError('EDGE_MISO_SDK_UNAVAILABLE', `MISO ${p.method} failed: the Ops stream broke (${why})`, code));
      }
    };
    s.on('error', (e: grpc.ServiceError) => broken(e.details || e.message, e.code));
    s.on('end', () => broken('ended by the agent', grpc.status.UNAVAILABLE));
    this.sweeper ??= setInterval(() => this.sweep(), DEADLINE_SWEEP_MS).unref();
    return s;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, p] of this.pending) {
      if (p.deadline > now) continue;
      this.pending.delete(id);
      p.reject(
        new MisoSdkError(
          'EDGE_MISO_SDK_DEADLINE',
          `MISO ${p.method} failed (DEADLINE_EXCEEDED): no answer within ${this.deadlineMs} ms`,
          grpc.status.DEADLINE_EXCEEDED,
        ),
      );
    }
  }

  private streamCall(method: 'Apply' | 'Read', body: 'apply' | 'read', req: Record<string, unknown>): Promise<OpResponse> {
    const id = this.nextId++;
    return new Promise<OpResponse>((resolve, reject) => {
      this.pending.set(id, { method, deadline: Date.now() + this.deadlineMs, resolve, reject });
      if (this.transport !== 'batch') {
        this.stream().write({ id, [body]: req });
        return;
      }
      let bytes = 32;
      for (const k in req) if (typeof req[k] === 'string') bytes += Buffer.byteLength(req[k] as string);
      if (this.queued.push({ op: { id, [body]: req }, bytes }) === 1) {
        // After the microtasks of this turn: every operation issued in it goes in one message.
        setImmediate(() => this.flushQueued());
      }
    });
  }

  /** Sends the queued operations, in messages of at most about BATCH_MAX_BYTES (the agent refuses messages over its limit). */
  private flushQueued(): void {
    const queued = this.queued;
    this.queued = [];
    let ops: object[] = [];
    let size = 0;
    for (const q of queued) {
      // An operation that failed meanwhile (deadline, close, broken stream) is not sent.
      if (!this.pending.has(q.op.id)) continue;
      if (ops.length > 0 && size + q.bytes > BATCH_MAX_BYTES) {
        this.stream().write({ ops });
        ops = [];
        size = 0;
      }
      ops.push(q.op);
      size += q.bytes;
    }
    if (ops.length > 0) this.stream().write({ ops });
  }

  register(fn: string, replica: string): Promise<{ node_id: string; replicas: number }> {
    return this.call('Register', { function: fn, replica });
  }

  unregister(fn: string, replica: string): Promise<{ replicas: number }> {
    return this.call('Unregister', { function: fn, replica });
  }

  /** Applies an op; with returnValue the value after the op is returned. */
  async apply(fn: string, object: string, name: string, type: string, op: unknown, returnValue = false): Promise<unknown> {
    const req = { function: fn, object, name, type, op_json: JSON.stringify(op), return_value: returnValue };
    const r = this.transport !== 'unary' ? await this.streamCall('Apply', 'apply', req) : await this.call<{ value_json: string }>('Apply', req);
    return returnValue ? (JSON.parse(r.value_json) as unknown) : undefined;
  }

  async read(fn: string, object: string, name: string, type = ''): Promise<{ type: string; value: unknown; exists: boolean }> {
    const req = { function: fn, object, name, type };
    const r =
      this.transport !== 'unary'
        ? await this.streamCall('Read', 'read', req)
        : await this.call<{ type: string; value_json: string; exists: boolean }>('Read', req);
    return { type: r.type, value: JSON.parse(r.value_json) as unknown, exists: r.exists };
  }

  async readObject(fn: string, object: string): Promise<CrdtValue[]> {
    const r = await this.call<{ crdts: { name: string; type: string; value_json: string }[] }>('ReadObject', { function: fn, object });
    return r.crdts.map((c) => ({ name: c.name, type: c.type, value: JSON.parse(c.value_json) as unknown }));
  }

  async delete(fn: string, object: string, name = ''): Promise<number> {
    const r = await this.call<{ deleted: number }>('Delete', { function: fn, object, name });
    return r.deleted;
  }

  async listObjects(fn = ''): Promise<{ function: string; object: string; crdts: CrdtValue[] }[]> {
    const r = await this.call<{ objects: { function: string; object: string; crdts: { name: string; type: string; value_json: string }[] }[] }>('ListObjects', {
      function: fn,
    });
    return r.objects.map((o) => ({
      function: o.function,
      object: o.object,
      crdts: o.crdts.map((c) => ({ name: c.name, type: c.type, value: JSON.parse(c.value_json) as unknown })),
    }));
  }

  status(): Promise<AgentStatus> {
    return this.call('Status', {});
  }

  /** Resolves when the agent's endpoint is connected, or rejects after the deadline. */
  waitForReady(deadlineMs: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.client.waitForReady(Date.now() + deadlineMs, (err) =>
        err
          ? reject(new MisoSdkError('EDGE_MISO_SDK_UNAVAILABLE', `MISO agent not reachable within ${deadlineMs} ms: ${err.message}`, undefined, { cause: err }))
          : resolve(),
      ),
    );
  }

  /** Closes the stream and the channel; pending operations fail. Safe to call twice. */
  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const s = this.ops;
    this.ops = undefined;
    this.queued = [];
    s?.end();
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.reject(new MisoSdkError('EDGE_MISO_SDK_CLOSED', `MISO ${p.method} failed: the client was closed`));
    }
    this.client.close();
  }
}

function toSdkError(method: string, err: grpc.ServiceError): MisoSdkError {
  const code = err.metadata?.get('edge-error-code')[0];
  const c = typeof code === 'string' ? code : err.code === grpc.status.DEADLINE_EXCEEDED ? 'EDGE_MISO_SDK_DEADLINE' : 'EDGE_MISO_SDK_UNAVAILABLE';
  return new MisoSdkError(c, `MISO ${method} failed (${grpc.status[err.code]}): ${err.details || err.message}`, err.code, { cause: err });
}
