/**
 * The Syncmesh request pipeline, independent of HTTP: validate, forward, execute, merge, shape.
 */
import { randomUUID } from 'node:crypto';
import {
  GraphQLError,
  execute,
  getArgumentValues,
  getOperationAST,
  getVariableValues,
  Kind,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { MongoError, MongoNetworkError, MongoNotConnectedError, MongoServerSelectionError, MongoTopologyClosedError, type MongoClient } from 'mongodb';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { SyncmeshError, type ErrorCode } from './errors.js';
import type { PartialAnswer } from './data/partials.js';
import { SensorStore } from './data/sensors.js';
import { dataSchema, metaSchema } from './graphql/schema.js';
import { assertNoOperators, depthLimitRule } from './graphql/limits.js';
import { DocumentCache } from './graphql/documents.js';
import { failedOutcome, fanOut, type NodeOutcome, type Target } from './mesh/forward.js';
import { admitPeer, systemResolver, type Resolver } from './mesh/peers.js';
import { assertMayRead, assertMayWrite, type Caller } from './access.js';
import { checkCost, type RootField } from './graphql/cost.js';
import type { NodeRegistry } from './mesh/registry.js';
import type { MeshAuth } from './mesh/signing.js';
import type { ReplicationService } from './replication/service.js';
import { REPLICA_SUFFIX } from './replication/replicas.js';
import { SeenRequests } from './mesh/seen.js';
import type { SyncmeshRequest } from './request.js';
import { dataRoot, validateDataArgs, type DataContext } from './resolvers/data.js';
import { metaRoot } from './resolvers/meta.js';

export interface Reply {
  status: number;
  body: Record<string, unknown>;
}

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

const isFailure = (o: NodeOutcome) => o.status === 'failed' || o.status === 'timeout';
const sameUrl = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

export interface ErrorBody {
  message: string;
  locations?: unknown;
  path?: unknown;
  extensions: { code: string } & Record<string, unknown>;
}

/**
 * Whether an error means this node's MongoDB cannot be reached (rather than a bug): network and
 * server-selection errors, also when wrapped (a bulk write whose connection closed).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (
      e instanceof MongoNetworkError ||
      e instanceof MongoServerSelectionError ||
      e instanceof MongoTopologyClosedError ||
      e instanceof MongoNotConnectedError
    )
      return true;
    if (e instanceof MongoError && (e.hasErrorLabel('ResetPool') || /ECONNREFUSED|ECONNRESET|connection \d+ to .* closed/.test(e.message))) return true;
  }
  return false;
}

/** MongoDB's code for an operation stopped by its maxTimeMS. */
const MAX_TIME_MS_EXPIRED = 50;

/** Turns any error into the error object of the GraphQL envelope, masking the unexpected ones. */
export function errorBody(err: unknown, log: Logger): { status: number; error: ErrorBody } {
  const gql = err instanceof GraphQLError ? err : undefined;
  const original = gql?.originalError ?? (gql ? undefined : err);
  const where = gql ? { ...(gql.locations ? { locations: gql.locations } : {}), ...(gql.path ? { path: gql.path } : {}) } : {};
  if (original instanceof SyncmeshError && original.expose) {
    return { status: original.status, error: { message: original.message, ...where, extensions: { code: original.code, ...(original.details ?? {}) } } };
  }
  if (original instanceof MongoError && original.code === MAX_TIME_MS_EXPIRED) {
    // the database stopped a read at the request deadline (maxTimeMS)
    return {
      status: 504,
      error: {
        message: 'the request took longer than its deadline (SYNCMESH_REQUEST_DEADLINE_MS)',
        ...where,
        extensions: { code: 'EDGE_SYNCMESH_DEADLINE_EXCEEDED' },
      },
    };
  }
  if (isDatabaseUnavailable(original)) {
    log.error({ err: original }, 'database unreachable');
    return {
      status: 503,
      error: {
        message: "this node's MongoDB is not reachable; check MONGODB_URI and the database process",
        ...where,
        extensions: { code: 'EDGE_SYNCMESH_DB_UNAVAILABLE' },
      },
    };
  }
  if (gql && !gql.originalError) {
    // A GraphQL error raised by graphql-js itself (e.g. a non-null field got null): safe to show.
    return { status: 500, error: { message: gql.message, ...where, extensions: { code: 'EDGE_SYNCMESH_INTERNAL' } } };
  }
  log.error({ err: original }, 'unexpected error');
  return { status: 500, error: { message: 'internal error; see the node log', ...where, extensions: { code: 'EDGE_SYNCMESH_INTERNAL' } } };
}

/** A request that passed its deadline may still settle later; its outcome no longer has a caller. */
function squashAfterDeadline(_err: unknown): void {
  // deliberately ignored: the caller already got EDGE_SYNCMESH_DEADLINE_EXCEEDED, and errors of the work itself are logged where they happen
}

function fail(code: ErrorCode, message: string, details?: Record<string, unknown>): SyncmeshError {
  return new SyncmeshError(code, message, details ? { details } : {});
}

/** Root fields of an operation, through fragments, with their response keys. */
function rootFields(op: OperationDefinitionNode, fragments: Map<string, FragmentDefinitionNode>) {
  const out: Array<{ key: string; node: import('graphql').FieldNode }> = [];
  const walk = (set: SelectionSetNode, seen: Set<string>) => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) out.push({ key: sel.alias?.value ?? sel.name.value, node: sel });
      else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet, seen);
      else {
        const frag = fragments.get(sel.name.value);
        if (frag && !seen.has(frag.name.value)) walk(frag.selectionSet, new Set([...seen, frag.name.value]));
      }
    }
  };
  walk(op.selectionSet, new Set());
  return out;
}

interface Prepared {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown>;
  /** The variables coerced to their GraphQL types (dates parsed, defaults applied). */
  coerced: Record<string, unknown>;
}

export class SyncmeshService {
  private readonly stores = new Map<string, SensorStore>();
  private readonly seen = new SeenRequests();
  private readonly rules;
  /** Valid documents per schema, by query text. */
  private readonly documents = new Map<GraphQLSchema, DocumentCache>([
    [dataSchema, new DocumentCache()],
    [metaSchema, new DocumentCache()],
  ]);

  constructor(private readonly deps: ServiceDeps) {
    this.rules = [...specifiedRules, depthLimitRule(deps.config.maxQueryDepth)];
  }

  storeFor(database: string, collection: string): SensorStore {
    const key = `${database}.${collection}`;
    let store = this.stores.get(key);
    if (!store) {
      store = new SensorStore(this.deps.client.db(database), collection, undefined, this.deps.config.requestDeadlineMs);
      this.stores.set(key, store);
    }
    return store;
  }

  /** Indexes on timestamp and (sensor_id, timestamp) in every allowed collection. */
  async ensureIndexes(): Promise<void> {
    for (const db of this.deps.config.databases) {
      for (const coll of this.deps.config.collections) await this.storeFor(db, coll).ensureIndexes();
    }
  }

  /** Parses and validates the GraphQL document and variables; every problem is an HTTP 400. */
  private prepare(req: SyncmeshRequest, schema: GraphQLSchema): Prepared {
    const cache = this.documents.get(schema);
    let document = cache?.get(req.query);
    if (!document) {
      document = this.parseAndValidate(req.query, schema);
      cache?.set(req.query, document);
    }
    assertNoOperators(req.variables);
    const operation = getOperationAST(document, req.operationName);
    if (!operation) {
      throw fail(
        'EDGE_SYNCMESH_BAD_REQUEST',
        req.operationName ? `no operation named '${req.operationName}'` : 'the document has several operations; name one with operationName',
      );
    }
    if (operation.operation === 'subscription') {
      throw fail('EDGE_SYNCMESH_GRAPHQL_VALIDATION', 'subscriptions are not supported', { allowed: ['query', 'mutation'] });
    }
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], req.variables);
    if (coerced.errors) throw fail('EDGE_SYNCMESH_BAD_ARGUMENT', coerced.errors[0]!.message);
    return { document, operation, variables: req.variables, coerced: coerced.coerced };
  }

  /** Parses and validates a GraphQL document; every problem is an HTTP 400. */
  private parseAndValidate(query: string, schema: GraphQLSchema): DocumentNode {
    let document: DocumentNode;
    try {
      document = parse(query, { maxTokens: 2000 });
    } catch (err) {
      const e = err as GraphQLError;
      throw fail('EDGE_SYNCMESH_GRAPHQL_SYNTAX', `GraphQL syntax error: ${e.message}`, e.locations ? { locations: e.locations } : undefined);
    }
    const errors = validate(schema, document, this.rules);
    if (errors.length > 0) {
      const first = errors[0]!;
      const tooDeep = first.extensions['code'] === 'EDGE_SYNCMESH_QUERY_TOO_DEEP';
      throw fail(tooDeep ? 'EDGE_SYNCMESH_QUERY_TOO_DEEP' : 'EDGE_SYNCMESH_GRAPHQL_VALIDATION', first.message, {
        ...(first.locations ? { locations: first.locations } : {}),
        ...(tooDeep ? { allowed: first.extensions['allowed'] } : {}),
        ...(errors.length > 1 ? { more: errors.slice(1, 5).map((e) => e.message) } : {}),
      });
    }
    return document;
  }

  /** Checks every root field's arguments and the operation's cost before anything is forwarded. */
  private preflight(p: Prepared, schema: GraphQLSchema, collect: boolean): void {
    const { config } = this.deps;
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of p.document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    const rootType = p.operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
    if (!rootType) return;
    const fields: RootField[] = [];
    for (const { node } of rootFields(p.operation, fragments)) {
      const def = rootType.getFields()[node.name.value];
      fields.push({ name: node.name.value, args: def ? getArgumentValues(def, node, p.coerced) : {} });
    }
    checkCost(fields, collect, config);
    if (schema !== dataSchema) return;
    const limits = { maxLimit: config.maxLimit, maxSensorsPerMutation: config.maxSensorsPerMutation, maxDeleteRangeMs: config.maxDeleteRangeMs };
    for (const f of fields) validateDataArgs(f.name, f.args, limits);
  }

  /**
   * Answers one request. `signed`: a valid mesh signature was checked; `authorization`: the
   * request's Authorization header (the write or read key). The whole request, fan-out included,
   * has SYNCMESH_REQUEST_DEADLINE_MS.
   */
  async handle(req: SyncmeshRequest, signed: boolean, authorization?: string): Promise<Reply> {
    if (req.mesh && !signed) throw fail('EDGE_SYNCMESH_UNAUTHORIZED', 'forwarded requests must be signed with the mesh secret');
    const caller: Caller = { signed, authorization };
    const ms = this.deps.config.requestDeadlineMs;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            fail('EDGE_SYNCMESH_DEADLINE_EXCEEDED', `the request took longer than ${ms} ms`, {
              allowed: `at most ${ms} ms per request (SYNCMESH_REQUEST_DEADLINE_MS); ask for fewer readings or a shorter time range`,
            }),
          ),
        ms,
      );
    });
    const work = req.requestType === 'meta' ? this.handleMeta(req, caller) : this.handleData(req, caller);
    try {
      return await Promise.race([work, deadline]);
    } finally {
      clearTimeout(timer);
      work.catch(squashAfterDeadline);
    }
  }

  private async handleMeta(req: SyncmeshRequest, caller: Caller): Promise<Reply> {
    const p = this.prepare(req, metaSchema);
    if (p.operation.operation === 'mutation' && !caller.signed) {
      throw fail('EDGE_SYNCMESH_UNAUTHORIZED', 'registry changes must be signed with the mesh secret (x-syncmesh-timestamp and x-syncmesh-signature headers)');
    }
    if (p.operation.operation !== 'mutation') assertMayRead(caller, this.deps.config);
    this.preflight(p, metaSchema, false);
    const result = await execute({
      schema: metaSchema,
      document: p.document,
      rootValue: metaRoot,
      contextValue: {
        registry: this.deps.registry,
        onSubscribed: async (nodeId: string) => {
          for (const db of this.deps.config.databases) {
            for (const coll of this.deps.config.collections) await this.deps.replication.snapshot(db, coll, [nodeId]);
          }
        },
      },
      variableValues: p.variables,
      operationName: req.operationName,
    });
    return this.shape(result, { node: this.deps.config.nodeId, request_type: 'meta' });
  }

  private async handleData(req: SyncmeshRequest, caller: Caller): Promise<Reply> {
    const { config, log } = this.deps;
    const started = performance.now();
    const p = this.prepare(req, dataSchema);
    if (p.operation.operation === 'mutation') assertMayWrite(caller, config);
    else assertMayRead(caller, config);
    this.preflight(p, dataSchema, req.requestType === 'collect');
    const onBehalfOf = req.mesh?.on_behalf_of;
    const store = onBehalfOf
      ? new SensorStore(this.deps.client.db(req.database), `${req.collection}${REPLICA_SUFFIX}`, onBehalfOf, config.requestDeadlineMs)
      : this.storeFor(req.database, req.collection);
    const isQuery = p.operation.operation === 'query';

    const requestId = req.mesh?.request_id ?? randomUUID();
    if (!this.seen.firstTime(requestId) && req.mesh) {
      // Reached this node a second time (nodes listing each other): it was counted already.
      return { status: 200, body: { extensions: { node: config.nodeId, duplicate: true } } };
    }
    const hop = req.mesh?.hop ?? 0;
    const selected = isQuery && hop < config.maxHops && !onBehalfOf ? await this.selectTargets(req) : [];
    const failover: Array<{ origin: string; by: string }> = [];

    // Allowed peers without a registry id cannot be signed for: reported, never contacted.
    let outcomes: NodeOutcome[] = selected.filter((t) => t.nodeId === undefined).map((t) => failedOutcome(t, 'EDGE_SYNCMESH_PEER_UNREGISTERED'));
    const targets = selected.filter((t) => t.nodeId !== undefined);
    let remote: Promise<Array<Record<string, PartialAnswer>>> | undefined;
    if (targets.length > 0) {
      if (!config.meshSecret) {
        outcomes.push(...targets.map((t) => failedOutcome(t, 'EDGE_SYNCMESH_NO_MESH_SECRET')));
      } else {
        const body = {
          query: req.query,
          variables: req.variables,
          operationName: req.operationName,
          database: req.database,
          collection: req.collection,
          request_type: req.requestType,
          use_meta_data: req.useMetaData,
          radius: req.radius,
          mesh: { request_id: requestId, hop: hop + 1, from: config.nodeId },
        };
        const opts = {
          auth: this.deps.auth,
          nodeTimeoutMs: config.nodeTimeoutMs,
          deadline: AbortSignal.timeout(config.deadlineMs),
          mode: config.forwardMode,
          log,
        };
        const unregistered = outcomes;
        remote = fanOut(targets, body, opts).then(async (r) => {
          outcomes = [...r.outcomes, ...unregistered];
          const answers = [...r.answers];
          // Entry node only: nodes that failed are answered for by a node holding their replicas.
          if (!req.mesh && outcomes.some(isFailure)) answers.push(...(await this.failover(req, p, body, opts, outcomes, failover)));
          return answers;
        });
      }
    }

    const ctx = this.newContext(req, store, remote);
    const result = await execute({
      schema: dataSchema,
      document: p.document,
      rootValue: dataRoot,
      contextValue: ctx,
      variableValues: p.variables,
      operationName: req.operationName,
    });
    if (remote) await remote; // resolvers that failed early did not wait for it
    const round = (x: number) => Math.round(x * 100) / 100;
    const timing = { ms: round(performance.now() - started), db_ms: round(ctx.dbMs) };

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
      nodes: outcomes,
      asked: outcomes.length + 1,
      answered: outcomes.filter((o) => o.status === 'ok').length + 1,
      partial: failed.length > 0,
      ...(failed.length > 0 ? { failed: failed.map((o) => ({ node: o.node, code: o.code, reason: o.reason })) } : {}),
      ...(failover.length > 0 ? { failover } : {}),
    });
  }

  /**
   * For every failed node with a registry id, asks a node that reported holding its replicas (or
   * uses this node's own replicas) to answer for it. Returns the extra partials; marks the
   * covered outcomes and records who answered for whom in `failover`.
   */
  private async failover(
    req: SyncmeshRequest,
    p: Prepared,
    body: Record<string, unknown>,
    opts: Parameters<typeof fanOut>[2],
    outcomes: NodeOutcome[],
    failover: Array<{ origin: string; by: string }>,
  ): Promise<Array<Record<string, PartialAnswer>>> {
    const registry = await this.deps.registry.list();
    const own = this.deps.replication.replicas.originsOf(req.database, req.collection);
    const mesh = body['mesh'] as { request_id: string; hop: number; from: string };
    const jobs = outcomes.filter(isFailure).map(async (failedNode, i): Promise<Record<string, PartialAnswer> | undefined> => {
      const origin = registry.find((n) => n.id === failedNode.node || sameUrl(n.address, failedNode.url))?.id;
      if (!origin || failedNode.code === 'EDGE_SYNCMESH_PEER_UNREGISTERED') return undefined;
      if (own.includes(origin)) {
        const partials = await this.localPartials(
          p,
          req,
          new SensorStore(this.deps.client.db(req.database), `${req.collection}${REPLICA_SUFFIX}`, origin, this.deps.config.requestDeadlineMs),
        );
        failedNode.covered_by = this.deps.config.nodeId;
        failover.push({ origin, by: this.deps.config.nodeId });
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
      failover.push({ origin, by: holder.node });
      return second.answers[0];
    });
    return (await Promise.all(jobs)).filter((a): a is Record<string, PartialAnswer> => a !== undefined);
  }

  private newContext(req: SyncmeshRequest, store: SensorStore, remote: DataContext['remote']): DataContext {
    return {
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
    const result = await execute({
      schema: dataSchema,
      document: p.document,
      rootValue: dataRoot,
      contextValue: ctx,
      variableValues: p.variables,
      operationName: req.operationName,
    });
    if (result.errors?.length) throw result.errors[0];
    return ctx.partials;
  }

  /**
   * external_nodes (mesh members only, see mesh/peers.ts; anything else is refused with 400
   * before any node is contacted), then (with use_meta_data) registry nodes within the radius,
   * nearest first.
   */
  private async selectTargets(req: SyncmeshRequest): Promise<Target[]> {
    const targets = new Map<string, Target>();
    const add = (t: Target) => {
      const key = t.url.replace(/\/+$/, '');
      if (!targets.has(key)) targets.set(key, t);
    };
    const nodes = req.externalNodes.length > 0 || req.useMetaData ? await this.deps.registry.list() : [];
    if (req.externalNodes.length > 0) {
      const ctx = {
        registry: nodes,
        ownNodeId: this.deps.config.nodeId,
        selfPort: this.deps.selfPort?.(),
        selfHost: this.deps.config.host,
        allowed: this.deps.config.allowedPeers,
        resolve: this.deps.resolve ?? systemResolver,
      };
      const admitted = await Promise.all(req.externalNodes.map((url) => admitPeer(url, ctx)));
      for (const peer of admitted) add(peer);
    }
    if (req.useMetaData) {
      const own = nodes.find((n) => n.own_node);
      if (req.radius !== undefined && !own) {
        throw fail(
          'EDGE_SYNCMESH_NO_OWN_NODE',
          "radius needs this node's location, but the registry has no own node; add it with a meta request: addNode(node: {id, address, lat, lon, own_node: true})",
        );
      }
      for (const n of nodes) {
        if (n.own_node) continue;
        if (req.radius !== undefined && (n.distance === null || n.distance > req.radius)) continue;
        if (n.id === this.deps.config.nodeId) continue;
        add({ url: n.address, nodeId: n.id, distanceKm: n.distance });
      }
      if (own) targets.delete(own.address.replace(/\/+$/, ''));
    }
    return [...targets.values()];
  }

  private shape(result: ExecutionResult, extensions: Record<string, unknown>): Reply {
    const body: Record<string, unknown> = {};
    let status = 200;
    if (result.errors?.length) {
      const mapped = result.errors.map((e) => errorBody(e, this.deps.log));
      status = Math.max(...mapped.map((m) => m.status));
      body['errors'] = mapped.map((m) => m.error);
    }
    if (result.data !== undefined) body['data'] = result.data;
    body['extensions'] = extensions;
    return { status, body };
  }
}
