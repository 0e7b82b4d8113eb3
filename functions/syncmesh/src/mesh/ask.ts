/**
 * Asking the other nodes for their part of a query: targets without a registry id are reported
 * (never contacted, a signature needs the id), a node without a mesh secret reports every target,
 * the rest get one signed fan-out; the caller may cover failed nodes (failover.ts) before the
 * answers are handed to the resolvers.
 */
import type { Logger } from '@syncmesh-edge/log';
import type { Config } from '../config.js';
import type { PartialAnswer } from '../data/partials.js';
import type { SyncmeshRequest } from '../request.js';
import { failedOutcome, fanOut, type FanOutOptions, type NodeOutcome, type Target } from './forward.js';
import type { MeshAuth } from './signing.js';

export type Answers = Array<Record<string, PartialAnswer>>;

export interface AskDeps {
  config: Config;
  auth: MeshAuth;
  log: Logger;
}

export interface Asked {
  /** Partials of the nodes that answered (undefined: nobody was asked). */
  remote: Promise<Answers> | undefined;
  /** Per-node outcomes; complete once `remote` settled. */
  outcomes(): NodeOutcome[];
}

/** The body forwarded to every target: the request, plus the mesh block of the next hop. */
export function forwardBody(req: SyncmeshRequest, requestId: string, hop: number, from: string): Record<string, unknown> {
  return {
    query: req.query,
    variables: req.variables,
    operationName: req.operationName,
    database: req.database,
    collection: req.collection,
    request_type: req.requestType,
    use_meta_data: req.useMetaData,
    radius: req.radius,
    mesh: { request_id: requestId, hop: hop + 1, from },
  };
}

export function askNodes(
  selected: readonly Target[],
  body: Record<string, unknown>,
  deps: AskDeps,
  /** Called with the outcomes when the fan-out is done; returns extra answers (failover). */
  onDone?: (opts: FanOutOptions, outcomes: NodeOutcome[]) => Promise<Answers>,
): Asked {
  const { config } = deps;
  // Allowed peers without a registry id cannot be signed for: reported, never contacted.
  let outcomes: NodeOutcome[] = selected.filter((t) => t.nodeId === undefined).map((t) => failedOutcome(t, 'EDGE_SYNCMESH_PEER_UNREGISTERED'));
  const targets = selected.filter((t) => t.nodeId !== undefined);
  if (targets.length === 0) return { remote: undefined, outcomes: () => outcomes };
  if (!config.meshSecret) {
    outcomes.push(...targets.map((t) => failedOutcome(t, 'EDGE_SYNCMESH_NO_MESH_SECRET')));
    return { remote: undefined, outcomes: () => outcomes };
  }
  const opts: FanOutOptions = {
    auth: deps.auth,
    nodeTimeoutMs: config.nodeTimeoutMs,
    deadline: AbortSignal.timeout(config.deadlineMs),
    mode: config.forwardMode,
    log: deps.log,
  };
  const unregistered = outcomes;
  const remote = fanOut(targets, body, opts).then(async (r) => {
    outcomes = [...r.outcomes, ...unregistered];
    const answers = [...r.answers];
    if (onDone) answers.push(...(await onDone(opts, outcomes)));
    return answers;
  });
  return { remote, outcomes: () => outcomes };
}
