/**
 * Turning a request into an executable operation: parse and validate the document (cached by
 * query text per schema), coerce the variables, refuse operators and subscriptions, then check
 * every root field's arguments and the operation's cost before anything is forwarded. Every
 * problem is a coded 400.
 */
import {
  getArgumentValues,
  getOperationAST,
  getVariableValues,
  Kind,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import type { Config } from '../config.js';
import { SyncmeshError, type ErrorCode } from '../errors.js';
import type { SyncmeshRequest } from '../request.js';
import { validateDataArgs } from '../resolvers/data.js';
import { checkCost, type RootField } from './cost.js';
import { DocumentCache } from './documents.js';
import { assertNoOperators, depthLimitRule } from './limits.js';
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
}

/** Root fields of an operation, through fragments, with their response keys. */
function rootFields(op: OperationDefinitionNode, fragments: Map<string, FragmentDefinitionNode>) {
  const out: Array<{ key: string; node: FieldNode }> = [];
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

export class Preparer {
  private readonly rules: ValidationRule[];
  /** Valid documents per schema, by query text. */
  private readonly documents = new Map<GraphQLSchema, DocumentCache>([
    [dataSchema, new DocumentCache()],
    [metaSchema, new DocumentCache()],
  ]);

  constructor(private readonly config: Config) {
    this.rules = [...specifiedRules, depthLimitRule(config.maxQueryDepth)];
  }

  /** Parses and validates the GraphQL document and variables; every problem is an HTTP 400. */
  prepare(req: SyncmeshRequest, schema: GraphQLSchema): Prepared {
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
  preflight(p: Prepared, schema: GraphQLSchema, collect: boolean): void {
    const config = this.config;
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
}
