/**
 * The reply envelope of every request: `data`, `errors`, `extensions`, and the HTTP status. Errors
 * are masked here (graphql-yoga's rule): our own coded errors and graphql-js's are shown, a
 * database that stopped at its deadline or cannot be reached gets its own code, anything else
 * becomes EDGE_SYNCMESH_INTERNAL and is logged in full.
 */
import { GraphQLError, type ExecutionResult } from 'graphql';
import { MongoError, MongoNetworkError, MongoNotConnectedError, MongoServerSelectionError, MongoTopologyClosedError } from 'mongodb';
import type { Logger } from '@syncmesh-edge/log';
import { SyncmeshError } from './errors.js';

export interface Reply {
  status: number;
  body: Record<string, unknown>;
  /** Sent instead of `body` as JSON (a downloaded SDL file). */
  raw?: { contentType: string; text: string };
}

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
  const reply = (status: number, message: string, extensions: ErrorBody['extensions']) => ({ status, error: { message, ...where, extensions } });
  if (original instanceof SyncmeshError && original.expose) {
    return reply(original.status, original.message, { code: original.code, ...(original.details ?? {}) });
  }
  if (original instanceof MongoError && original.code === MAX_TIME_MS_EXPIRED) {
    // the database stopped a read at the request deadline (maxTimeMS)
    return reply(504, 'the request took longer than its deadline (SYNCMESH_REQUEST_DEADLINE_MS)', { code: 'EDGE_SYNCMESH_DEADLINE_EXCEEDED' });
  }
  if (isDatabaseUnavailable(original)) {
    log.error({ err: original }, 'database unreachable');
    return reply(503, "this node's MongoDB is not reachable; check MONGODB_URI and the database process", { code: 'EDGE_SYNCMESH_DB_UNAVAILABLE' });
  }
  if (gql && !gql.originalError) {
    // A GraphQL error raised by graphql-js itself (e.g. a non-null field got null): safe to show.
    return reply(500, gql.message, { code: 'EDGE_SYNCMESH_INTERNAL' });
  }
  log.error({ err: original }, 'unexpected error');
  return reply(500, 'internal error; see the node log', { code: 'EDGE_SYNCMESH_INTERNAL' });
}

/** Builds the reply for an execution result: masked errors, the highest status among them. */
export function shapeReply(result: ExecutionResult, extensions: Record<string, unknown>, log: Logger): Reply {
  const body: Record<string, unknown> = {};
  let status = 200;
  if (result.errors?.length) {
    const mapped = result.errors.map((e) => errorBody(e, log));
    status = Math.max(...mapped.map((m) => m.status));
    body['errors'] = mapped.map((m) => m.error);
  }
  if (result.data !== undefined) body['data'] = result.data;
  body['extensions'] = extensions;
  return { status, body };
}
