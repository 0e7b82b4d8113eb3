/**
 * Restore (MISO's Algorithm 2): a CRDT, or a whole object, missing here is fetched from live
 * peers that run its function before the operation that needs it proceeds.
 */
import type { AgentConfig } from '../config.js';
import type { Logger } from '@syncmesh-edge/log';
import { keyOf, type ReplicaState, type WireEntry } from '../sync/state.js';
import type { AgentMetrics } from './metrics.js';
import { pickRandom } from './peer-protocol.js';
import type { PeerTable } from './peers.js';

export interface RestorerDeps {
  config: AgentConfig;
  log: Logger;
  state: ReplicaState;
  peers: PeerTable;
  metrics: AgentMetrics | undefined;
  now: () => number;
  /** Merges a fetched entry (the replicator's merge: written behind like any remote change). */
  merge(fn: string, w: WireEntry): void;
}

export class Restorer {
  private readonly restored = new Set<string>();
  private readonly restoring = new Map<string, Promise<void>>();

  constructor(private readonly d: RestorerDeps) {}

  /** Undefined when the CRDT is here (the fast path); else a promise that restores it from peers. */
  ensureLocal(fn: string, object: string, name: string): Promise<void> | undefined {
    if (this.d.state.get(fn, object, name)) return undefined;
    return this.restore(fn, object, name);
  }

  /**
   * Fetches a CRDT (or, with name '', a whole object) missing locally from live peers that run
   * the function (up to MISO_RESTORE_FANOUT of them, at random), joins what they return, then
   * lets the operation proceed. Peers that do not answer within the fetch deadline are skipped:
   * the CRDT then starts from what we have, and replication merges the rest later (no operation
   * is lost, only delayed).
   */
  restore(fn: string, object: string, name: string): Promise<void> | undefined {
    const key = keyOf(fn, object, name);
    if (this.restored.has(key)) return undefined;
    const candidates = this.d.peers.fetchable(fn, this.d.now());
    if (candidates.length === 0) return undefined;
    // A few random peers are enough (every peer running fn gets every update); asking all of
    // them would make N nodes touching a new CRDT at once cost N^2 fetches.
    const sources = pickRandom(candidates, this.d.config.restoreFanout);
    let p = this.restoring.get(key);
    if (p) return p;
    p = (async () => {
      const req = { function: fn, object, name };
      const results = await Promise.allSettled(sources.map((s) => s.out!.fetch(req, this.d.config.fetchTimeoutMs)));
      let got = 0;
      results.forEach((r, i) => {
        if (r.status === 'rejected') {
          this.d.metrics?.restores.inc({ result: 'error' });
          this.d.log.warn({ peer: sources[i]!.sync.nodeId, err: (r.reason as Error).message }, 'restore fetch failed');
          return;
        }
        this.d.metrics?.restores.inc({ result: 'ok' });
        for (const w of r.value.entries) {
          got++;
          this.d.merge(fn, w);
        }
      });
      this.restored.add(key);
      this.d.log.debug({ fn, object, name, entries: got, peers: sources.length }, 'restored from peers');
    })().finally(() => this.restoring.delete(key));
    this.restoring.set(key, p);
    return p;
  }
}
