/**
 * The cost limit of one request, checked on the document's summary (analysis.ts) before graphql-js
 * validates it, before anything runs and before anything is forwarded. A forwarded request is
 * checked again, against its own limits, by every node it reaches: the same query text derives
 * the same cost there, and no node does more than its own limits allow.
 *
 * - at most `maxSelections` field selections, every fragment spread expanded where it is spread
 *   (what any walk over the query, graphql-js's included, may have to visit);
 * - at most `maxQueryDepth` nested fields (`maxIntrospectionDepth` for an operation that selects
 *   only `__schema`, `__type` and `__typename`: the standard introspection query nests 15 deep);
 * - at most `maxRootFields` root fields (each alias is one), since every root field is a database
 *   query on every node the request reaches;
 * - in collect mode, the `limit`s of all `sensors` fields together at most `maxTotalLimit`
 *   readings (a field without `limit` counts as the largest allowed limit, `maxLimit`);
 * - an answer of at most `maxAnswerValues` values: the sum over every selected leaf (aliases
 *   included) of the product of the list sizes above it.
 */
import { SyncmeshError } from '../errors.js';
import type { Summary } from './analysis.js';

export interface CostLimits {
  maxRootFields: number;
  maxTotalLimit: number;
  maxLimit: number;
  maxSelections: number;
  maxAnswerValues: number;
  maxQueryDepth: number;
  maxIntrospectionDepth: number;
}

const costly = (message: string, allowed: string) => new SyncmeshError('EDGE_SYNCMESH_QUERY_TOO_COSTLY', message, { details: { allowed } });

/** A count for a message: astronomically large ones (a fragment chain's) as a power of ten. */
const shown = (n: number) => (n < 1e15 ? String(n) : `more than 1e${Math.min(308, Math.floor(Math.log10(n)))}`);

/** Throws EDGE_SYNCMESH_QUERY_TOO_COSTLY or _QUERY_TOO_DEEP naming what is over and what is allowed. */
export function checkCost(s: Summary, collect: boolean, limits: CostLimits): void {
  if (s.selections > limits.maxSelections) {
    throw costly(
      `the operation expands to ${shown(s.selections)} field selections (every fragment spread counted where it is spread); at most ${limits.maxSelections} are allowed`,
      `at most ${limits.maxSelections} field selections per operation, fragments expanded (SYNCMESH_MAX_SELECTIONS)`,
    );
  }
  const introspection = s.introspectionOnly && s.rootFields > 0;
  const maxDepth = introspection ? limits.maxIntrospectionDepth : limits.maxQueryDepth;
  if (s.depth > maxDepth) {
    const variable = introspection ? 'SYNCMESH_MAX_INTROSPECTION_DEPTH' : 'SYNCMESH_MAX_QUERY_DEPTH';
    throw new SyncmeshError('EDGE_SYNCMESH_QUERY_TOO_DEEP', `query depth ${s.depth} exceeds the limit of ${maxDepth}`, {
      details: { allowed: `at most ${maxDepth} nested fields${introspection ? ' in an introspection query' : ''} (${variable})` },
    });
  }
  if (s.rootFields > limits.maxRootFields) {
    throw costly(
      `the operation has ${shown(s.rootFields)} root fields (aliases count); at most ${limits.maxRootFields} are allowed`,
      `at most ${limits.maxRootFields} root fields per request (SYNCMESH_MAX_ROOT_FIELDS)`,
    );
  }
  if (collect && s.readings > limits.maxTotalLimit) {
    throw costly(
      `the sensors fields ask for ${shown(s.readings)} readings in total; at most ${limits.maxTotalLimit} are allowed`,
      `the limits of all sensors fields together at most ${limits.maxTotalLimit} (SYNCMESH_MAX_TOTAL_LIMIT); a sensors field without limit counts as ${limits.maxLimit}`,
    );
  }
  if (s.values > limits.maxAnswerValues) {
    throw costly(
      `the answer may hold ${shown(s.values)} values (every selected field, aliases included, times the limit of each list above it); at most ${limits.maxAnswerValues} are allowed`,
      `at most ${limits.maxAnswerValues} values per answer (SYNCMESH_MAX_ANSWER_VALUES): select fewer fields or give sensors a smaller limit (a sensors field without limit counts as ${limits.maxLimit} readings)`,
    );
  }
}
