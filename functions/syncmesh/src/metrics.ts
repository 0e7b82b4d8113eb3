/**
 * Prometheus metrics of the function (prefix edge_syncmesh_), on their own prom-client registry
 * (the library the MISO agent uses), served at GET /metrics (app.ts).
 *
 * One registry others add to: a module that wants a metric creates it with
 * `registers: [metrics.registry]` (or adds a collector with `metrics.onCollect`), and the hooks
 * stay where the work is. What this module measures itself, from the HTTP layer only (app.ts
 * calls `observeReply` once per answered request):
 *
 * - requests by type and outcome (`edge_syncmesh_requests_total{type,outcome,caller}`);
 * - forward latency per peer, from the answer's `extensions.nodes` (`edge_syncmesh_forward_seconds`);
 * - refusals by the cost limits (`edge_syncmesh_cost_refusals_total{code}`);
 * - the replication outbox per subscriber, read when scraped: batches waiting and the age of the
 *   oldest one (`edge_syncmesh_outbox_batches`, `edge_syncmesh_replication_lag_seconds`).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Collection, ObjectId } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import type { Reply } from './reply.js';
import { VERSION } from './version.js';

/** What a request is, for its labels: the envelope's request_type on `/`, else the endpoint. */
export type RequestType =
  | 'collect'
  | 'aggregate'
  | 'meta'
  | 'events'
  | 'resync'
  | 'replicate'
  | 'replication-check'
  | 'health'
  | 'schema'
  | 'metrics'
  | 'query'
  | 'other';

/** Errors that mean "this request costs more than this node allows" (graphql/cost.ts, answers.ts, app.ts). */
export const COST_REFUSAL_CODES: ReadonlySet<string> = new Set([
  'EDGE_SYNCMESH_QUERY_TOO_COSTLY',
  'EDGE_SYNCMESH_QUERY_TOO_DEEP',
  'EDGE_SYNCMESH_BODY_TOO_LARGE',
  'EDGE_SYNCMESH_BUSY',
]);

/** The labels of one request, filled in as the request is understood (app.ts). */
export interface RequestLabels {
  type: RequestType;
  /** `mesh`: a valid mesh signature (another node, the listener, an operator); `client` otherwise. */
  caller: 'client' | 'mesh';
}

/** How long one scrape may wait for the outbox query. */
const OUTBOX_QUERY_MS = 2_000;

/** The type label of a path (without the gateway prefix); `/` becomes its request_type later. */
export function typeOfPath(path: string): RequestType {
  switch (path) {
    case '/':
      return 'query';
    case '/healthz':
    case '/readyz':
      return 'health';
    case '/metrics':
      return 'metrics';
    case '/schema.graphql':
    case '/meta-schema.graphql':
      return 'schema';
    case '/events':
      return 'events';
    case '/resync':
      return 'resync';
    case '/replicate':
    case '/replicate/status':
    case '/replicate/digest':
      return 'replicate';
    case '/replication/check':
      return 'replication-check';
    default:
      return 'other';
  }
}

/** `ok`, `partial` (an answer that lacks some nodes), or the code of the first error. */
export function outcomeOf(reply: Reply): string {
  const errors = reply.body['errors'];
  if (Array.isArray(errors) && errors.length > 0) {
    const code = (errors[0] as { extensions?: { code?: unknown } }).extensions?.code;
    return typeof code === 'string' ? code : `http_${reply.status}`;
  }
  if (reply.status >= 400) return `http_${reply.status}`;
  const ext = reply.body['extensions'] as { partial?: unknown } | undefined;
  return ext?.partial === true ? 'partial' : 'ok';
}

interface NodeOutcome {
  node?: unknown;
  status?: unknown;
  ms?: unknown;
}

export interface OutboxSource {
  /** `syncmesh_meta.replication_outbox`: one document per batch, `pending` lists the subscribers that still need it. */
  outbox: Collection<{ _id: ObjectId; pending: string[] }>;
  /** Ids of the registry's subscribed nodes (shown with 0 when nothing waits for them). */
  subscribers(): Promise<string[]>;
}

export class FunctionMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'type' | 'outcome' | 'caller'>;
  readonly forwardSeconds: Histogram<'peer' | 'status'>;
  readonly costRefusals: Counter<'code'>;
  readonly outboxBatches: Gauge<'subscriber'>;
  readonly replicationLag: Gauge<'subscriber'>;
  private readonly collectors: Array<() => Promise<void>> = [];
  private readonly log: Logger | undefined;

  /**
   * `withDefaults`: also the process metrics (CPU, memory, event-loop delay sampled every 100 ms,
   * as the agent does); main.ts turns them on, tests that build many apps in one process do not.
   */
  constructor(opts: { nodeId: string; withDefaults?: boolean; log?: Logger }) {
    const registry = this.registry;
    this.log = opts.log;
    this.requests = new Counter({
      name: 'edge_syncmesh_requests_total',
      help: 'Requests answered, by type (request_type on /, else the endpoint), outcome (ok, partial, or the error code) and caller (client, or mesh: a valid mesh signature)',
      labelNames: ['type', 'outcome', 'caller'] as const,
      registers: [registry],
    });
    this.forwardSeconds = new Histogram({
      name: 'edge_syncmesh_forward_seconds',
      help: 'Time until a forwarded query was answered by each peer (or failed), by peer and status (ok, failed, timeout, duplicate), from the entry node',
      labelNames: ['peer', 'status'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.costRefusals = new Counter({
      name: 'edge_syncmesh_cost_refusals_total',
      help: 'Requests refused by the cost limits, by error code (QUERY_TOO_COSTLY, QUERY_TOO_DEEP, BODY_TOO_LARGE, BUSY)',
      labelNames: ['code'] as const,
      registers: [registry],
    });
    this.outboxBatches = new Gauge({
      name: 'edge_syncmesh_outbox_batches',
      help: 'Replication batches in the outbox that a subscriber has not acknowledged yet (read when scraped)',
      labelNames: ['subscriber'] as const,
      registers: [registry],
    });
    this.replicationLag = new Gauge({
      name: 'edge_syncmesh_replication_lag_seconds',
      help: 'Age of the oldest replication batch a subscriber has not acknowledged (0: nothing waits; read when scraped)',
      labelNames: ['subscriber'] as const,
      registers: [registry],
    });
    new Gauge({
      name: 'edge_syncmesh_build_info',
      help: 'Version of the function and the node it serves (always 1)',
      labelNames: ['version', 'node'] as const,
      registers: [registry],
    }).set({ version: VERSION, node: opts.nodeId }, 1);
    if (opts.withDefaults) collectDefaultMetrics({ register: registry, prefix: 'edge_syncmesh_', eventLoopMonitoringPrecision: 100 });
  }

  /** Adds work done when the registry is scraped (before the gauges are read). */
  onCollect(collector: () => Promise<void>): void {
    this.collectors.push(collector);
  }

  /** Reads the outbox's depth and lag per subscriber at every scrape (one aggregation). */
  watchOutbox(source: OutboxSource): void {
    this.onCollect(async () => {
      // emptied first: when the database does not answer, the scrape shows no value rather than an old one
      this.outboxBatches.reset();
      this.replicationLag.reset();
      const [subscribers, rows] = await Promise.all([
        source.subscribers(),
        source.outbox
          .aggregate<{ _id: string; batches: number; oldest: ObjectId }>(
            [{ $unwind: '$pending' }, { $group: { _id: '$pending', batches: { $sum: 1 }, oldest: { $min: '$_id' } } }],
            { maxTimeMS: OUTBOX_QUERY_MS },
          )
          .toArray(),
      ]);
      const now = Date.now();
      for (const id of subscribers) {
        this.outboxBatches.set({ subscriber: id }, 0);
        this.replicationLag.set({ subscriber: id }, 0);
      }
      for (const r of rows) {
        this.outboxBatches.set({ subscriber: r._id }, r.batches);
        this.replicationLag.set({ subscriber: r._id }, Math.max(0, (now - r.oldest.getTimestamp().getTime()) / 1000));
      }
    });
  }

  /** Counts one answered request (and its forwards and cost refusals). */
  observeReply(labels: RequestLabels, reply: Reply): void {
    const outcome = outcomeOf(reply);
    this.requests.inc({ type: labels.type, outcome, caller: labels.caller });
    if (COST_REFUSAL_CODES.has(outcome)) this.costRefusals.inc({ code: outcome.replace(/^EDGE_SYNCMESH_/, '') });
    const nodes = (reply.body['extensions'] as { nodes?: unknown } | undefined)?.nodes;
    if (!Array.isArray(nodes)) return;
    for (const n of nodes as NodeOutcome[]) {
      if (typeof n.node === 'string' && typeof n.ms === 'number' && typeof n.status === 'string') {
        this.forwardSeconds.observe({ peer: n.node, status: n.status }, n.ms / 1000);
      }
    }
  }

  /**
   * The text exposition of every metric, after the collectors ran (prom-client reads all metrics
   * at once, so gauges that one query fills are filled first).
   */
  async render(): Promise<{ contentType: string; text: string }> {
    await Promise.all(
      this.collectors.map((c) =>
        c().catch((err: unknown) => {
          // a scrape while the database is down still answers, with the other metrics
          this.log?.debug({ err: (err as Error).message }, 'metrics: a collector failed; its gauges are left out of this scrape');
        }),
      ),
    );
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
