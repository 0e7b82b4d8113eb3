/**
 * The Syncmesh request pipeline, independent of HTTP: prepare (graphql/prepare.ts), check the
 * caller, forward (mesh/targets.ts, mesh/ask.ts, mesh/failover.ts), execute here, merge, shape the
 * reply (reply.ts). The whole request, fan-out included, has SYNCMESH_REQUEST_DEADLINE_MS
 * (deadline.ts); stores are in data/stores.ts.
 */
import { randomUUID } from 'node:crypto';
import { execute, type ExecutionResult } from 'graphql';
import type { MongoClient } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import { ValuesInFlight } from './answers.js';
import { assertMayRead, assertMayWrite, type Caller } from './access.js';
import type { Config } from './config.js';
import type { PartialAnswer } from './data/partials.js';
import type { SensorStore } from './data/sensors.js';
import { SensorStores } from './data/stores.js';
import { withDeadline } from './deadline.js';
import { SyncmeshError } from './errors.js';
import { DocumentCache } from './graphql/documents.js';
import { Preparer, type Prepared } from './graphql/prepare.js';
import { dataSchema, metaSchema } from './graphql/schema.js';
import { askNodes, forwardBody, type Answers } from './mesh/ask.js';
import { coverFailedNodes, isFailure, type Covered } from './mesh/failover.js';
import type { Resolver } from './mesh/peers.js';
import type { NodeRegistry } from './mesh/registry.js';
import { SeenRequests } from './mesh/seen.js';
import type { MeshAuth } from './mesh/signing.js';
import { selectTargets } from './mesh/targets.js';
import { shapeReply, type Reply } from './reply.js';
import type { ReplicationService } from './replication/service.js';
import type { SyncmeshRequest } from './request.js';
import { dataRoot, type DataContext } from './resolvers/data.js';
import { metaRoot } from './resolvers/meta.js';

export type { Reply } from './reply.js';

export interface ServiceDeps {
  config: Config;
  client: MongoClient;
  registry: NodeRegistry;
  replication: ReplicationService;
  log: Logger;
  /** Signs forwarded requests (protocol v2). */
  auth: MeshAuth;
  /** The port this node's server listens on (external_nodes never reach it on an own address). */
  selfPort?: () => number | undefined;
  /** Resolves peer host names; the system resolver by default (tests inject their own). */
  resolve?: Resolver;
}

const round = (x: number) => Math.round(x * 100) / 100;

/** The operation's cost as checked (graphql/cost.ts), for the client: what its limits were compared with. */
const costOf = (p: Prepared) => ({ values: p.cost.values, selections: p.cost.selections, depth: p.cost.depth, readings: p.cost.readings });

export class SyncmeshService {
  readonly stores: SensorStores;
  private readonly seen = new SeenRequests();
  private readonly preparer: Preparer;
  /** Answers of introspection queries by request_type, operation, variables and text. */
  private readonly introspection = new DocumentCache<ExecutionResult>(32);
  /** Estimated values of the answers being built (answers.ts). */
  private readonly inFlight: ValuesInFlight;

  constructor(private readonly deps: ServiceDeps) {
    this.preparer = new Preparer(deps.config);
    this.inFlight = new ValuesInFlight(deps.config.maxValuesInFlight);
    this.stores = new SensorStores(deps.client, deps.config);
  }

  /**
   * Answers one request. `signed`: a valid mesh signature was checked; `authorization`: the
   * request's Authorization header (the write or read key).
   */
  async handle(req: SyncmeshRequest, signed: boolean, authorization?: string): Promise<Reply> {
    if (req.mesh && !signed) throw new SyncmeshError('EDGE_SYNCMESH_UNAUTHORIZED', 'forwarded requests must be signed with the mesh secret');
    const caller: Caller = { signed, authorization };
    const work = req.requestType === 'meta' ? this.handleMeta(req, caller) : this.handleData(req, caller);
    return withDeadline(work, this.deps.config.requestDeadlineMs);
  }

  private async handleMeta(req: SyncmeshRequest, caller: Caller): Promise<Reply> {
    const { config, registry, replication } = this.deps;
    const p = this.preparer.prepare(req, metaSchema);
    if (p.operation.operation === 'mutation' && !caller.signed) {
      throw new SyncmeshError(
        'EDGE_SYNCMESH_UNAUTHORIZED',
        'registry changes must be signed with the mesh secret (x-syncmesh-timestamp and x-syncmesh-signature headers)',
      );
    }
    if (p.operation.operation !== 'mutation') assertMayRead(caller, config);
    if (p.introspection) return this.introspect(p, req, metaSchema);
    this.preparer.preflight(p, metaSchema);
    const onSubscribed = async (nodeId: string) => {
      for (const db of config.databases) for (const coll of config.collections) await replication.snapshot(db, coll, [nodeId]);
    };
    const result = await this.execute(metaSchema, p, req, { registry, onSubscribed });
    return this.shape(result, { node: config.nodeId, request_type: 'meta' });
  }

  private async handleData(req: SyncmeshRequest, caller: Caller): Promise<Reply> {
    const { config } = this.deps;
    const started = performance.now();
    const p = this.preparer.prepare(req, dataSchema);
    if (p.operation.operation === 'mutation') assertMayWrite(caller, config);
    else assertMayRead(caller, config);
    if (p.introspection) return this.introspect(p, req, dataSchema);
    this.preparer.preflight(p, dataSchema);
    const release = this.inFlight.admit(p.cost.values);
    try {
      return await this.answerData(req, p, started);
    } finally {
      release(); // when the work ends, also after its deadline answered the client
    }
  }

  private async answerData(req: SyncmeshRequest, p: Prepared, started: number): Promise<Reply> {
    const { config } = this.deps;
    const onBehalfOf = req.mesh?.on_behalf_of;
    const store = onBehalfOf ? this.stores.replicasOf(req.database, req.collection, onBehalfOf) : this.stores.own(req.database, req.collection);

    const requestId = req.mesh?.request_id ?? randomUUID();
    if (!this.seen.firstTime(requestId) && req.mesh) {
      // Reached this node a second time (nodes listing each other): it was counted already.
      return { status: 200, body: { extensions: { node: config.nodeId, duplicate: true } } };
    }
    const hop = req.mesh?.hop ?? 0;
    const forwards = p.operation.operation === 'query' && hop < config.maxHops && !onBehalfOf;
    const selected = forwards ? await selectTargets(req, this.deps) : [];
    const covered: Covered[] = [];
    const body = forwardBody(req, requestId, hop, config.nodeId);
    // Entry node only: nodes that failed are answered for by a node holding their replicas.
    const failover = req.mesh
      ? undefined
      : (opts: Parameters<typeof coverFailedNodes>[2], outcomes: Parameters<typeof coverFailedNodes>[3]) =>
          outcomes.some(isFailure) ? coverFailedNodes(this.failoverDeps(req, p), body, opts, outcomes, covered) : Promise.resolve<Answers>([]);
    const asked = askNodes(selected, body, this.deps, failover);

    const ctx = this.newContext(req, store, asked.remote);
    const result = await this.execute(dataSchema, p, req, ctx);
    if (asked.remote) await asked.remote; // resolvers that failed early did not wait for it
    const timing = { ms: round(performance.now() - started), db_ms: round(ctx.dbMs) };
    const outcomes = asked.outcomes();

    if (req.mesh) {
      const replicas = this.deps.replication.replicas.originsOf(req.database, req.collection);
      const reply = this.shape(result, {
        node: config.nodeId,
        partials: ctx.partials,
        timing,
        ...(replicas.length ? { replicas } : {}),
        ...(onBehalfOf ? { on_behalf_of: onBehalfOf } : {}),
        ...(outcomes.length ? { nodes: outcomes } : {}),
      });
      delete reply.body['data']; // the entry node only needs the partials
      return reply;
    }
    const failed = outcomes.filter((o) => isFailure(o) && !o.covered_by);
    return this.shape(result, {
      node: config.nodeId,
      request_id: requestId,
      request_type: req.requestType,
      timing,
      cost: costOf(p),
      nodes: outcomes,
      asked: outcomes.length + 1,
      answered: outcomes.filter((o) => o.status === 'ok').length + 1,
      partial: failed.length > 0,
      ...(failed.length > 0 ? { failed: failed.map((o) => ({ node: o.node, code: o.code, reason: o.reason })) } : {}),
      ...(covered.length > 0 ? { failover: covered } : {}),
    });
  }

  /**
   * An operation that selects only __schema, __type and __typename: answered from the schema
   * alone (never forwarded, no database), and cached by its text and variables.
   */
  private introspect(p: Prepared, req: SyncmeshRequest, schema: typeof dataSchema): Reply {
    const key = `${req.requestType}\n${req.operationName ?? ''}\n${JSON.stringify(req.variables)}\n${req.query}`;
    let result = this.introspection.get(key);
    if (!result) {
      result = execute({ schema, document: p.document, variableValues: p.variables, operationName: req.operationName }) as ExecutionResult;
      if (!result.errors) this.introspection.set(key, result);
    }
    return this.shape(result, { node: this.deps.config.nodeId, request_type: req.requestType, introspection: true, cost: costOf(p) });
  }

  private failoverDeps(req: SyncmeshRequest, p: Prepared) {
    return {
      registry: this.deps.registry,
      nodeId: this.deps.config.nodeId,
      ownReplicas: this.deps.replication.replicas.originsOf(req.database, req.collection),
      localPartials: (origin: string) => this.localPartials(p, req, this.stores.replicasOf(req.database, req.collection, origin)),
    };
  }

  private execute(schema: typeof dataSchema, p: Prepared, req: SyncmeshRequest, contextValue: unknown): Promise<ExecutionResult> {
    const rootValue = schema === dataSchema ? dataRoot : metaRoot;
    return Promise.resolve(execute({ schema, document: p.document, rootValue, contextValue, variableValues: p.variables, operationName: req.operationName }));
  }

  private newContext(req: SyncmeshRequest, store: SensorStore, remote: DataContext['remote']): DataContext {
    return {
      nodeId: this.deps.config.nodeId,
      store,
      requestType: req.requestType === 'aggregate' ? 'aggregate' : 'collect',
      maxLimit: this.deps.config.maxLimit,
      maxSensorsPerMutation: this.deps.config.maxSensorsPerMutation,
      maxDeleteRangeMs: this.deps.config.maxDeleteRangeMs,
      partials: {},
      remote,
      dbMs: 0,
    };
  }

  /** Runs the query against one store of this node and returns its partials (no forwarding). */
  private async localPartials(p: Prepared, req: SyncmeshRequest, store: SensorStore): Promise<Record<string, PartialAnswer>> {
    const ctx = this.newContext(req, store, undefined);
    const result = await this.execute(dataSchema, p, req, ctx);
    if (result.errors?.length) throw result.errors[0];
    return ctx.partials;
  }

  private shape(result: ExecutionResult, extensions: Record<string, unknown>): Reply {
    return shapeReply(result, extensions, this.deps.log);
  }
}
