/**
 * The request envelope, compatible with the original Syncmesh function:
 *   {query, variables, database, collection, request_type, external_nodes, use_meta_data, radius}
 * plus `mesh` on requests forwarded between nodes (signed).
 */
import { z } from 'zod';
import type { Config } from './config.js';
import { SyncmeshError } from './errors.js';

export const REQUEST_TYPES = ['collect', 'aggregate', 'meta'] as const;
export type RequestType = (typeof REQUEST_TYPES)[number];

const meshSchema = z
  .object({
    request_id: z.string().regex(/^[A-Za-z0-9-]{8,64}$/),
    hop: z.number().int().min(1).max(16),
    from: z.string().min(1).max(64),
    on_behalf_of: z.string().min(1).max(64).optional(),
  })
  .strict();

const envelopeSchema = z
  .object({
    query: z.string({ error: 'query is required and must be a GraphQL document string' }).min(1, 'query must not be empty'),
    variables: z.record(z.string(), z.unknown()).nullish(),
    operationName: z.string().nullish(),
    database: z.string().nullish(),
    collection: z.string().nullish(),
    request_type: z.string().nullish(),
    external_nodes: z.array(z.string()).nullish(),
    use_meta_data: z.boolean().nullish(),
    radius: z.number().nullish(),
    mesh: meshSchema.nullish(),
  })
  .loose();

export interface MeshInfo {
  request_id: string;
  hop: number;
  from: string;
  /** Failover: answer from the replicas of this node instead of from the own readings. */
  on_behalf_of?: string | undefined;
}

export interface SyncmeshRequest {
  query: string;
  variables: Record<string, unknown>;
  operationName: string | undefined;
  database: string;
  collection: string;
  requestType: RequestType;
  externalNodes: string[];
  useMetaData: boolean;
  /** km around the own node; undefined: no radius filter. */
  radius: number | undefined;
  /** Present on forwarded requests only. */
  mesh: MeshInfo | undefined;
}

const bad = (code: 'EDGE_SYNCMESH_BAD_REQUEST' | 'EDGE_SYNCMESH_BAD_REQUEST_TYPE' | 'EDGE_SYNCMESH_NOT_ALLOWED_TARGET', message: string, allowed?: unknown) =>
  new SyncmeshError(code, message, allowed === undefined ? {} : { details: { allowed } });

/** Validates a parsed JSON body. Throws a SyncmeshError (HTTP 400) that names the problem and what is allowed. */
export function parseEnvelope(body: unknown, config: Config): SyncmeshRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw bad(
      'EDGE_SYNCMESH_BAD_REQUEST',
      'the body must be a JSON object',
      '{query, variables, database, collection, request_type, external_nodes, use_meta_data, radius}',
    );
  }
  const parsed = envelopeSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.') || 'body';
    throw bad('EDGE_SYNCMESH_BAD_REQUEST', `${field}: ${issue.message}`);
  }
  const e = parsed.data;
  const requestType = e.request_type ?? 'collect';
  if (!(REQUEST_TYPES as readonly string[]).includes(requestType)) {
    throw bad('EDGE_SYNCMESH_BAD_REQUEST_TYPE', `unknown request_type '${requestType}'`, REQUEST_TYPES);
  }
  const database = e.database ?? config.databases[0]!;
  if (!config.databases.includes(database)) {
    throw bad('EDGE_SYNCMESH_NOT_ALLOWED_TARGET', `database '${database}' is not allowed`, config.databases);
  }
  const collection = e.collection ?? config.collections[0]!;
  if (!config.collections.includes(collection)) {
    throw bad('EDGE_SYNCMESH_NOT_ALLOWED_TARGET', `collection '${collection}' is not allowed`, config.collections);
  }
  if (e.radius !== null && e.radius !== undefined && !(Number.isFinite(e.radius) && e.radius >= 0)) {
    throw bad('EDGE_SYNCMESH_BAD_REQUEST', `radius must be a number of km >= 0, got ${e.radius}`, 'a number >= 0');
  }
  const externalNodes = e.external_nodes ?? [];
  if (externalNodes.length > config.maxExternalNodes) {
    throw bad('EDGE_SYNCMESH_BAD_REQUEST', `external_nodes lists ${externalNodes.length} nodes; at most ${config.maxExternalNodes} are allowed`);
  }
  for (const url of externalNodes) {
    if (!isHttpUrl(url)) {
      throw bad('EDGE_SYNCMESH_BAD_REQUEST', `external_nodes: '${url}' is not an http(s) URL`, 'e.g. http://10.0.0.2:8080/function/syncmesh-fn');
    }
  }
  return {
    query: e.query,
    variables: (e.variables ?? {}) as Record<string, unknown>,
    operationName: e.operationName ?? undefined,
    database,
    collection,
    requestType: requestType as RequestType,
    externalNodes,
    useMetaData: e.use_meta_data ?? false,
    radius: e.radius ?? undefined,
    mesh: e.mesh ?? undefined,
  };
}

export function isHttpUrl(s: string): boolean {
  if (!URL.canParse(s)) return false;
  const u = new URL(s);
  return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
}
