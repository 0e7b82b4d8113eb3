/**
 * Prometheus metrics of the listener (prefix edge_listener_), on their own prom-client registry
 * (the library the function and the MISO agent use), served at GET /metrics on
 * LISTENER_HEALTH_ADDR (health.ts). Everything is read from the collections' stats() when
 * scraped, so the listener's hot path does no metrics work.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { CollectionStats } from './listener.js';
import { VERSION } from './version.js';

type CountField = 'read' | 'acknowledged' | 'batches' | 'retries' | 'resyncs' | 'deadLetters';

/** Counters kept by the listener, exposed as Prometheus counters (label ns: db.collection). */
const COUNTERS: ReadonlyArray<{ field: CountField; name: string; help: string }> = [
  { field: 'read', name: 'edge_listener_events_read_total', help: 'Changes read from the change stream' },
  { field: 'acknowledged', name: 'edge_listener_events_acknowledged_total', help: 'Events the function acknowledged' },
  { field: 'batches', name: 'edge_listener_batches_total', help: 'Batches delivered (acknowledged or dead-lettered)' },
  { field: 'retries', name: 'edge_listener_delivery_retries_total', help: 'Failed deliveries that were retried' },
  { field: 'resyncs', name: 'edge_listener_resyncs_total', help: 'Full resyncs the function acknowledged' },
  { field: 'deadLetters', name: 'edge_listener_dead_letters_total', help: 'Batches the function rejected for good (recorded in listener_dead_letters)' },
];

export class ListenerMetrics {
  readonly registry = new Registry();

  /**
   * `stats`: the collections' counters and states (Listener.stats); `withDefaults`: also the
   * process metrics (event-loop delay sampled every 100 ms, as the agent does); main.ts turns them on.
   */
  constructor(stats: () => CollectionStats[], opts: { nodeId: string; withDefaults?: boolean; now?: () => number }) {
    const registry = this.registry;
    const now = opts.now ?? Date.now;
    for (const c of COUNTERS) {
      new Counter({
        name: c.name,
        help: c.help,
        labelNames: ['ns'] as const,
        registers: [registry],
        collect() {
          this.reset();
          for (const s of stats()) this.inc({ ns: s.ns }, s[c.field]);
        },
      });
    }
    const gauge = (name: string, help: string, value: (s: CollectionStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['ns'] as const,
        registers: [registry],
        collect() {
          this.reset();
          for (const s of stats()) this.set({ ns: s.ns }, value(s));
        },
      });
    gauge('edge_listener_queued_events', 'Changes read and waiting for delivery (at most LISTENER_QUEUE_MAX)', (s) => s.queued);
    gauge(
      'edge_listener_lag_seconds',
      'Age of the oldest change read but not yet done: acknowledged by the function and its resume token stored (0: nothing waits)',
      (s) => (s.oldestUnackedAt === null ? 0 : Math.max(0, (now() - s.oldestUnackedAt) / 1000)),
    );
    gauge('edge_listener_stream_up', '1 while the change stream is streaming', (s) => (s.streamState === 'streaming' ? 1 : 0));
    gauge('edge_listener_function_up', '1 while the function acknowledges deliveries', (s) => (s.deliveryState === 'delivering' ? 1 : 0));
    new Gauge({
      name: 'edge_listener_build_info',
      help: 'Version of the listener and the node it serves (always 1)',
      labelNames: ['version', 'node'] as const,
      registers: [registry],
    }).set({ version: VERSION, node: opts.nodeId }, 1);
    if (opts.withDefaults) collectDefaultMetrics({ register: registry, prefix: 'edge_listener_', eventLoopMonitoringPrecision: 100 });
  }

  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
