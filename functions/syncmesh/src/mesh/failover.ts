/**
 * Failover (entry node only): every node that failed and has a registry id is answered for by a
 * node holding its replicas: this node itself when it holds them, else a node that answered and
 * reported holding them (asked again with `on_behalf_of`). Nodes nobody covers stay failed.
 */
import type { PartialAnswer } from '../data/partials.js';
import { fanOut, type FanOutOptions, type NodeOutcome } from './forward.js';
import type { NodeRegistry } from './registry.js';

export const isFailure = (o: NodeOutcome) => o.status === 'failed' || o.status === 'timeout';
const sameUrl = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/** Who answered for whom. */
export interface Covered {
  origin: string;
  by: string;
}

export interface FailoverDeps {
  registry: NodeRegistry;
  /** This node's id. */
  nodeId: string;
  /** Origins whose replicas this node holds for the request's collection. */
  ownReplicas: readonly string[];
  /** Answers the query from this node's replicas of `origin`. */
  localPartials(origin: string): Promise<Record<string, PartialAnswer>>;
}

/**
 * Returns the extra partials; marks the covered outcomes (`covered_by`) and records who answered
 * for whom in `covered`. `body` is the forwarded request body (with its `mesh` block).
 */
export async function coverFailedNodes(
  deps: FailoverDeps,
  body: Record<string, unknown>,
  opts: FanOutOptions,
  outcomes: NodeOutcome[],
  covered: Covered[],
): Promise<Array<Record<string, PartialAnswer>>> {
  const registry = await deps.registry.list();
  const mesh = body['mesh'] as { request_id: string; hop: number; from: string };
  const jobs = outcomes.filter(isFailure).map(async (failedNode, i): Promise<Record<string, PartialAnswer> | undefined> => {
    const origin = registry.find((n) => n.id === failedNode.node || sameUrl(n.address, failedNode.url))?.id;
    if (!origin || failedNode.code === 'EDGE_SYNCMESH_PEER_UNREGISTERED') return undefined;
    if (deps.ownReplicas.includes(origin)) {
      const partials = await deps.localPartials(origin);
      failedNode.covered_by = deps.nodeId;
      covered.push({ origin, by: deps.nodeId });
      return partials;
    }
    const holder = outcomes.find((o) => o.status === 'ok' && o.replicas?.includes(origin));
    if (!holder) return undefined;
    const second = await fanOut(
      [{ url: holder.url, nodeId: holder.node }],
      { ...body, mesh: { ...mesh, request_id: `${mesh.request_id.slice(0, 48)}-fo${i}`, on_behalf_of: origin } },
      opts,
    );
    if (second.outcomes[0]?.status !== 'ok') return undefined;
    failedNode.covered_by = holder.node;
    covered.push({ origin, by: holder.node });
    return second.answers[0];
  });
  return (await Promise.all(jobs)).filter((a): a is Record<string, PartialAnswer> => a !== undefined);
}
