/** Prometheus metrics of the agent (prefix edge_miso_), on their own registry. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * A counter for hot paths (every SDK op, every peer message): increments are summed in a plain
 * map and handed to prom-client when the registry collects, because prom-client hashes the
 * label set on every inc(). Label values are given in labelNames order.
 */
export class BufferedCounter<L extends string> {
  readonly counter: Counter<L>;
  private readonly pending = new Map<string, number>();

  constructor(name: string, help: string, labelNames: readonly L[], registry: Registry) {
    const pending = this.pending;
    this.counter = new Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        for (const [key, n] of pending) {
          const values = key.split('\u0000');
          const labels = {} as Record<L, string>;
          for (const [i, l] of labelNames.entries()) labels[l] = values[i]!;
          this.inc(labels, n);
        }
        pending.clear();
      },
    });
  }

  /** Adds n to the series with these label values (in labelNames order; at most three labels). */
  inc(n: number, a: string, b?: string, c?: string): void {
    const key = c !== undefined ? `${a}\u0000${b}\u0000${c}` : b !== undefined ? `${a}\u0000${b}` : a;
    this.pending.set(key, (this.pending.get(key) ?? 0) + n);
  }
}

export class AgentMetrics {
  readonly registry = new Registry();
  /** Labels: method, result. */
  readonly ops = new BufferedCounter('edge_miso_sdk_calls_total', 'SDK calls by method and result', ['method', 'result'] as const, this.registry);
  /** Labels: peer, direction. */
  readonly replicationBytes = new BufferedCounter(
    'edge_miso_replication_bytes_total',
    'Peer protocol bytes by peer and direction',
    ['peer', 'direction'] as const,
    this.registry,
  );
  /** Labels: peer, direction, kind. */
  readonly replicationMessages = new BufferedCounter(
    'edge_miso_replication_messages_total',
    'Peer protocol messages by peer, direction and kind',
    ['peer', 'direction', 'kind'] as const,
    this.registry,
  );
  readonly lag = new Histogram({
    name: 'edge_miso_replication_lag_ms',
    help: 'Time from sending a debounced update batch to its acknowledgement',
    labelNames: ['peer'] as const,
    buckets: [0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000, 5000],
    registers: [this.registry],
  });
  readonly sendTime = new Histogram({
    name: 'edge_miso_replication_send_ms',
    help: 'Time to encode a debounced update once and write it to the stream of every peer running its function (no ack)',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 100],
    registers: [this.registry],
  });
  readonly peers = new Gauge({ name: 'edge_miso_peers', help: 'Peers by state', labelNames: ['state'] as const, registers: [this.registry] });
  readonly crdts = new Gauge({ name: 'edge_miso_crdts', help: 'CRDTs held (including tombstones)', registers: [this.registry] });
  readonly persistPending = new Gauge({
    name: 'edge_miso_persist_pending',
    help: 'CRDTs changed but not yet written to MongoDB',
    registers: [this.registry],
  });
  readonly restores = new Counter({
    name: 'edge_miso_restores_total',
    help: 'Restore fetches (Algorithm 2) by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  /** Labels: code (EDGE_MISO_AUTH, EDGE_MISO_PEER_ID, EDGE_MISO_PEER_PROTOCOL). */
  readonly authFailures = new BufferedCounter(
    'edge_miso_peer_auth_failures_total',
    'Peer links refused by the handshake or a message MAC, by code',
    ['code'] as const,
    this.registry,
  );

  constructor(withDefaults = true) {
    // Event-loop delay sampled every 100 ms instead of prom-client's 10 ms: the sampling timer
    // wakes the process, and an idle agent (one of 30 on a small node) should sleep.
    if (withDefaults) collectDefaultMetrics({ register: this.registry, prefix: 'edge_miso_', eventLoopMonitoringPrecision: 100 });
  }
}
