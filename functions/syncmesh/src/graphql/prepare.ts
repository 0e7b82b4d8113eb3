/**
 * Turning a request into an executable operation: parse (at most SYNCMESH_MAX_QUERY_TOKENS
 * tokens), check the variables, analyse the operation's cost (analysis.ts, linear, fragments
 * memoised) and refuse it when it is over a limit (cost.ts), and only then validate the document
 * with graphql-js (whose OverlappingFieldsCanBeMerged rule is quadratic in the fields of a
 * selection set: the limits above bound it), coerce the variables, and check every root field's
 * arguments before anything is forwarded. Parsing, analysis and validation of a new document
 * are measured in CPU time; past SYNCMESH_MAX_PREPARE_CPU_MS the document is parsed and
 * validated again (twice at most) and measured again, and only when that also passes the limit is it refused
 * and remembered, so sending it again costs nothing. (A fresh process pays for compiling
 * graphql-js on its first documents, and the process's CPU time includes V8's compiler threads:
 * under software emulation the registry's first three-line query measured 947 ms and was
 * refused for good, and no VM of make test-tf-local ever registered itself.) Valid documents are cached by query text per
 * schema. Every problem is a coded 400.
 */
import {
  getArgumentValues,
  getOperationAST,
  getVariableValues,
  GraphQLError,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  Kind,
  parse,
  specifiedRules,
  validate,
  type ArgumentNode,
  type DocumentNode,
  type FieldNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { Config } from '../config.js';
import { SyncmeshError, type ErrorCode } from '../errors.js';
import type { SyncmeshRequest } from '../request.js';
import { validateDataArgs } from '../resolvers/data.js';
import { analyse, rootFieldNodes, type FieldAt, type Rules, type Summary } from './analysis.js';
import { checkCost } from './cost.js';
import { DocumentCache } from './documents.js';
import { checkVariables } from './limits.js';
import { dataSchema, metaSchema } from './schema.js';

function fail(code: ErrorCode, message: string, details?: Record<string, unknown>): SyncmeshError {
  return new SyncmeshError(code, message, details ? { details } : {});
}

export interface Prepared {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown>;
  /** The variables coerced to their GraphQL types (dates parsed, defaults applied). */
  coerced: Record<string, unknown>;
  /** What the operation costs (analysis.ts). */
  cost: Summary;
  /** The operation selects only __schema, __type and __typename: answered from the schema alone. */
  introspection: boolean;
}

/** A registry list (`nodes`) counts as this many nodes in the answer estimate. */
export const REGISTRY_LIST_SIZE = 1_000;

/** The longest list of each introspection field of a schema (`types`, `fields`, `args`, ...). */
const introspectionSizes = new WeakMap<GraphQLSchema, Map<string, number>>();

function introspectionSizesOf(schema: GraphQLSchema): Map<string, number> {
  const sizes = introspectionSizes.get(schema);
  if (sizes) return sizes;
  const found = new Map<string, number>();
  const most = (name: string, n: number) => found.set(name, Math.max(found.get(name) ?? 0, n));
  const types = Object.values(schema.getTypeMap());
  most('types', types.length);
  most('directives', schema.getDirectives().length);
  for (const d of schema.getDirectives()) {
    most('args', d.args.length);
    most('locations', d.locations.length);
  }
  for (const t of types) {
    if (isObjectType(t) || isInterfaceType(t)) {
      most('fields', Object.keys(t.getFields()).length);
      most('interfaces', t.getInterfaces().length);
      for (const f of Object.values(t.getFields())) most('args', f.args.length);
    }
    if (isInputObjectType(t)) most('inputFields', Object.keys(t.getFields()).length);
    if (isEnumType(t)) most('enumValues', t.getValues().length);
    if (isAbstractType(t)) most('possibleTypes', schema.getPossibleTypes(t).length);
  }
  introspectionSizes.set(schema, found);
  return found;
}

/** An Int argument given as a literal, a variable, or a variable's default; undefined otherwise. */
function intArgument(node: FieldNode, name: string, variables: Record<string, unknown>, op: OperationDefinitionNode): number | undefined {
  const arg: ArgumentNode | undefined = node.arguments?.find((a) => a.name.value === name);
  if (!arg) return undefined;
  const v = arg.value;
  if (v.kind === Kind.INT) return Number(v.value);
  if (v.kind !== Kind.VARIABLE) return undefined;
  const given = variables[v.name.value];
  if (typeof given === 'number' && Number.isInteger(given)) return given;
  if (given !== undefined) return undefined;
  const def = op.variableDefinitions?.find((d) => d.variable.name.value === v.name.value)?.defaultValue;
  return def?.kind === Kind.INT ? Number(def.value) : undefined;
}

/** How many elements a list argument holds (a literal list, or a variable's array); undefined otherwise. */
function listArgumentLength(node: FieldNode, name: string, variables: Record<string, unknown>): number | undefined {
  const v = node.arguments?.find((a) => a.name.value === name)?.value;
  if (v?.kind === Kind.LIST) return v.values.length;
  if (v?.kind === Kind.VARIABLE) {
    const given = variables[v.name.value];
    return Array.isArray(given) ? given.length : undefined;
  }
  return undefined;
}

/** The list sizes of a request: `limit` (or the cap), the registry's size, introspection lists. */
function rulesFor(schema: GraphQLSchema, req: SyncmeshRequest, op: OperationDefinitionNode, config: Config): Rules {
  const collect = req.requestType === 'collect';
  const clamp = (n: number | undefined) => Math.min(Math.max(n ?? config.maxLimit, 0), config.maxLimit);
  const isSensors = (f: FieldAt) => schema === dataSchema && f.parent === schema.getQueryType() && f.node.name.value === 'sensors';
  return {
    sizeOf(f) {
      const name = f.node.name.value;
      if (f.parent?.name.startsWith('__')) return introspectionSizesOf(schema).get(name) ?? Object.keys(schema.getTypeMap()).length;
      if (name === '__schema' || name === '__type') return 1;
      // `sensors` in aggregate mode answers one element (the mesh-wide averages)
      if (isSensors(f)) return collect ? clamp(intArgument(f.node, 'limit', req.variables, op)) : 1;
      if (schema === dataSchema && f.node.name.value === 'addSensors')
        return Math.min(listArgumentLength(f.node, 'sensors', req.variables) ?? config.maxSensorsPerMutation, config.maxSensorsPerMutation);
      if (schema === metaSchema && f.node.name.value === 'nodes') return REGISTRY_LIST_SIZE;
      return config.maxLimit;
    },
    readings(f) {
      return collect && isSensors(f) ? clamp(intArgument(f.node, 'limit', req.variables, op)) : 0;
    },
  };
}

/** CPU time (user + system) of this process since `start`, in ms. */
const cpuMsSince = (start: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
};

export class Preparer {
  /** Valid documents per schema, by query text. */
  private readonly documents = new Map<GraphQLSchema, DocumentCache>([
    [dataSchema, new DocumentCache()],
    [metaSchema, new DocumentCache()],
  ]);
  /** Documents refused for the CPU their parsing and validation took, per schema, by query text. */
  private readonly refused = new Map<GraphQLSchema, DocumentCache<SyncmeshError>>([
    [dataSchema, new DocumentCache(64)],
    [metaSchema, new DocumentCache(64)],
  ]);

  /**
   * `cpuMs` measures what a function costs in CPU ms (tests pass their own); by default the
   * process's user + system time.
   */
  constructor(
    private readonly config: Config,
    private readonly cpuMs: (work: () => void) => number = (work) => {
      const start = process.cpuUsage();
      work();
      return cpuMsSince(start);
    },
  ) {}

  /** Parses, analyses and validates the GraphQL document and variables; every problem is an HTTP 400. */
  prepare(req: SyncmeshRequest, schema: GraphQLSchema): Prepared {
    const config = this.config;
    const remembered = this.refused.get(schema)?.get(req.query);
    if (remembered) throw remembered;
    checkVariables(req.variables);
    const started = process.cpuUsage();
    const cache = this.documents.get(schema);
    let document = cache?.get(req.query);
    const known = document !== undefined;
    document ??= this.parse(req.query);
    const operation = getOperationAST(document, req.operationName);
    if (!operation) {
      throw fail(
        'EDGE_SYNCMESH_BAD_REQUEST',
        req.operationName ? `no operation named '${req.operationName}'` : 'the document has several operations; name one with operationName',
      );
    }
    let cost: Summary;
    try {
      cost = analyse(schema, document, operation, rulesFor(schema, req, operation, config));
    } catch (err) {
      if (err instanceof GraphQLError) throw fail('EDGE_SYNCMESH_GRAPHQL_VALIDATION', err.message, err.locations ? { locations: err.locations } : undefined);
      throw err;
    }
    checkCost(cost, req.requestType === 'collect', config);
    if (!known) {
      let cpuMs = cpuMsSince(started) + this.cpuMs(() => this.validate(document, schema));
      // again, warm (twice at most): a document is refused for what it costs, not for a cold process
      for (let again = 0; again < 2 && cpuMs > config.maxPrepareCpuMs; again++) {
        cpuMs = this.cpuMs(() => this.validate(this.parse(req.query), schema));
      }
      if (cpuMs > config.maxPrepareCpuMs) {
        const err = fail(
          'EDGE_SYNCMESH_QUERY_TOO_COSTLY',
          `parsing and validating the query took ${Math.round(cpuMs)} ms of CPU; at most ${config.maxPrepareCpuMs} ms are allowed`,
          { allowed: `at most ${config.maxPrepareCpuMs} ms of CPU per new query document (SYNCMESH_MAX_PREPARE_CPU_MS): send a smaller document` },
        );
        this.refused.get(schema)?.set(req.query, err);
        throw err;
      }
      cache?.set(req.query, document);
    }
    if (operation.operation === 'subscription') {
      throw fail('EDGE_SYNCMESH_GRAPHQL_VALIDATION', 'subscriptions are not supported', { allowed: ['query', 'mutation'] });
    }
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], req.variables);
    if (coerced.errors) throw fail('EDGE_SYNCMESH_BAD_ARGUMENT', coerced.errors[0]!.message);
    const introspection = cost.introspectionOnly && cost.rootFields > 0 && operation.operation === 'query';
    return { document, operation, variables: req.variables, coerced: coerced.coerced, cost, introspection };
  }

  private parse(query: string): DocumentNode {
    try {
      return parse(query, { maxTokens: this.config.maxQueryTokens });
    } catch (err) {
      const e = err as GraphQLError;
      throw fail(
        'EDGE_SYNCMESH_GRAPHQL_SYNTAX',
        `GraphQL syntax error: ${e.message}`,
        /contains more th\w+ \d+ tokens/.test(e.message)
          ? { allowed: `at most ${this.config.maxQueryTokens} tokens per document (SYNCMESH_MAX_QUERY_TOKENS)` }
          : e.locations
            ? { locations: e.locations }
            : undefined,
      );
    }
  }

  /** graphql-js's validation; every problem is an HTTP 400. */
  private validate(document: DocumentNode, schema: GraphQLSchema): void {
    const errors = validate(schema, document, specifiedRules);
    if (errors.length > 0) {
      const first = errors[0]!;
      throw fail('EDGE_SYNCMESH_GRAPHQL_VALIDATION', first.message, {
        ...(first.locations ? { locations: first.locations } : {}),
        ...(errors.length > 1 ? { more: errors.slice(1, 5).map((e) => e.message) } : {}),
      });
    }
  }

  /** Checks every root field's arguments before anything is forwarded (the cost was checked by prepare). */
  preflight(p: Prepared, schema: GraphQLSchema): void {
    if (schema !== dataSchema) return;
    const rootType = p.operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
    if (!rootType) return;
    const config = this.config;
    const limits = { maxLimit: config.maxLimit, maxSensorsPerMutation: config.maxSensorsPerMutation, maxDeleteRangeMs: config.maxDeleteRangeMs };
    for (const node of rootFieldNodes(p.document, p.operation)) {
      const def = rootType.getFields()[node.name.value];
      if (def) validateDataArgs(node.name.value, getArgumentValues(def, node, p.coerced), limits);
    }
  }
}
