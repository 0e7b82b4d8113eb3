/** Prometheus metrics of the agent (prefix edge_miso_), on their own registry. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class AgentMetrics {
  readonly registry = new Registry();
  readonly ops = new Counter({
    name: 'edge_miso_sdk_calls_total',
    help: 'SDK calls by method and result',
    labelNames: ['method', 'result'] as const,
    registers: [this.registry],
  });
  readonly replicationBytes = new Counter({
    name: 'edge_miso_replication_bytes_total',
    help: 'Peer protocol bytes by peer and direction',
    labelNames: ['peer', 'direction'] as const,
    registers: [this.registry],
  });
  readonly replicationMessages = new Counter({
    name: 'edge_miso_replication_messages_total',
    help: 'Peer protocol messages by peer, direction and kind',
    labelNames: ['peer', 'direction', 'kind'] as const,
    registers: [this.registry],
  });
  readonly lag = new Histogram({
    name: 'edge_miso_replication_lag_ms',
    help: 'Time from sending a debounced update batch to its acknowledgement',
    labelNames: ['peer'] as const,
    buckets: [0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000, 5000],
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

  constructor(withDefaults = true) {
    if (withDefaults) collectDefaultMetrics({ register: this.registry, prefix: 'edge_miso_' });
  }
}
