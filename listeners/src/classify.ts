/**
 * The single place that decides what a failure means. Everything else asks `classifyError`.
 *
 * - retry:  transient; try again after a backoff (network, server selection, 5xx, timeouts,
 *           and every server error not listed below: the listener must not die on errors that
 *           go away, as the original one did).
 * - resync: the server cannot resume from the stored token; restart the stream from now and
 *           ask the function for a full resync.
 * - reject: the function refused the batch itself for good (4xx other than 401, 403, 404,
 *           408, 429); dead-letter it, request a `dead-letter` resync so the subscribers do not
 *           drift (listener.ts), and move on. `replay` (cli.ts) re-delivers dead letters.
 * - fatal:  retrying cannot help (not a replica set, authentication, bad arguments, a bug in
 *           the listener); exit with `exitCode` and a message that says how to fix it.
 */
import { MongoAPIError, MongoError, MongoNotConnectedError, MongoParseError, MongoServerError, MongoTopologyClosedError } from 'mongodb';
import { EXIT } from '@syncmesh-edge/log/service';
import { DeliveryError, ERROR_CODES, ListenerError, type ListenerErrorCode } from './errors.js';

export type Verdict =
  | { action: 'retry'; code: ListenerErrorCode | 'MONGO_TRANSIENT' }
  | { action: 'resync'; code: typeof ERROR_CODES.HISTORY_LOST }
  | { action: 'reject'; code: typeof ERROR_CODES.DELIVERY_REJECTED }
  | { action: 'fatal'; code: ListenerErrorCode; exitCode: number; fix: string };

/** 4xx answers that are retried: see classifyError. */
const RETRYABLE_4XX = new Set([401, 403, 404, 408, 429]);

/** The $changeStream stage is only supported on replica sets (MongoDB code 40573). */
const NOT_REPLICA_SET_CODE = 40573;
const NOT_REPLICA_SET_TEXT = 'only supported on replica sets';
/**
 * Server codes meaning "this resume token cannot be used":
 * 286 ChangeStreamHistoryLost (the oplog no longer holds the token's position),
 * 280 ChangeStreamFatalError (4.x: "resume token was not found"),
 * 260 InvalidResumeToken.
 */
const HISTORY_LOST_CODES = new Set([286, 280, 260]);
/** AuthenticationFailed, Unauthorized: a wrong URI or missing role; retrying will not fix it. */
const AUTH_CODES = new Set([18, 13]);
/**
 * The test server cannot parse a token it did not issue (e.g. a real MongoDB token, or one from
 * before a reset) and answers "Unknown error: For input string: ... under radix 16".
 */
const TEST_SERVER_BAD_TOKEN = /For input string: .* under radix 16/;

/**
 * Server codes that say "try again" (the driver's GET_MORE_RESUMABLE_CODES plus
 * NotYetInitialized 94): a refusal with one of these never counts towards a resync.
 */
const TRANSIENT_SERVER_CODES = new Set([6, 7, 43, 63, 89, 91, 94, 133, 150, 189, 234, 262, 9001, 10107, 11600, 11602, 13388, 13435, 13436]);
/**
 * How many times in a row a server may refuse to resume from a stored token, with an error not
 * listed anywhere above, before the token counts as unknown (history lost). Covers tokens a
 * server rejects with codes this file does not know; a resync is always safe, only costly.
 */
export const RESUME_REFUSALS_BEFORE_RESYNC = 3;

export interface ClassifyContext {
  /** The failing stream was opened from a stored token. */
  resuming?: boolean;
  /** Consecutive server errors while opening from that token, this one included. */
  resumeRefusals?: number;
}

export const NOT_REPLICA_SET_FIX =
  'MongoDB must run as a replica set for change streams; a single node is enough: start mongod with ' +
  '--replSet rs0, run rs.initiate() once, and use ?replicaSet=rs0 (or directConnection=true) in MONGODB_URI. ' +
  'On nodes the Ansible mongodb role does this.';

function serverCode(err: unknown): number | undefined {
  if (err instanceof MongoServerError && typeof err.code === 'number') return err.code;
  return undefined;
}

export function classifyError(err: unknown, ctx: ClassifyContext = {}): Verdict {
  if (err instanceof DeliveryError) {
    const s = err.status;
    // 408 Request Timeout and 429 Too Many Requests are 4xx but ask to come back later.
    // 401/403 (mesh secrets differ) and 404 (function not deployed yet, wrong URL) say nothing
    // about the batch: they are fixed by configuration, so the batch waits instead of being
    // dead-lettered; every batch after it would fail the same way.
    if (s !== undefined && s >= 400 && s < 500 && !RETRYABLE_4XX.has(s)) {
      return { action: 'reject', code: ERROR_CODES.DELIVERY_REJECTED };
    }
    return { action: 'retry', code: ERROR_CODES.DELIVERY_FAILED };
  }
  if (err instanceof MongoError) {
    const code = serverCode(err);
    const message = err.message ?? '';
    if (code === NOT_REPLICA_SET_CODE || message.includes(NOT_REPLICA_SET_TEXT)) {
      return { action: 'fatal', code: ERROR_CODES.NOT_REPLICA_SET, exitCode: EXIT.CONFIG, fix: NOT_REPLICA_SET_FIX };
    }
    if (code !== undefined && HISTORY_LOST_CODES.has(code)) {
      return { action: 'resync', code: ERROR_CODES.HISTORY_LOST };
    }
    if (ctx.resuming && err instanceof MongoServerError && TEST_SERVER_BAD_TOKEN.test(message)) {
      return { action: 'resync', code: ERROR_CODES.HISTORY_LOST };
    }
    if (code !== undefined && AUTH_CODES.has(code)) {
      return {
        action: 'fatal',
        code: ERROR_CODES.MONGO_FATAL,
        exitCode: EXIT.CONFIG,
        fix: 'check the user, password and roles in MONGODB_URI (the listener needs read on the watched database and readWrite on the meta database)',
      };
    }
    // The driver closes its topology when a connect fails (MongoDB down at start); an operation
    // racing with that sees "Topology is closed". The next attempt connects again.
    if (err instanceof MongoTopologyClosedError || err instanceof MongoNotConnectedError) {
      return { action: 'retry', code: 'MONGO_TRANSIENT' };
    }
    if (err instanceof MongoParseError || err instanceof MongoAPIError) {
      return { action: 'fatal', code: ERROR_CODES.MONGO_FATAL, exitCode: EXIT.CONFIG, fix: 'check MONGODB_URI and the listener options' };
    }
    if (
      ctx.resuming &&
      (ctx.resumeRefusals ?? 0) >= RESUME_REFUSALS_BEFORE_RESYNC &&
      err instanceof MongoServerError &&
      !err.hasErrorLabel('ResumableChangeStreamError') &&
      !(code !== undefined && TRANSIENT_SERVER_CODES.has(code))
    ) {
      return { action: 'resync', code: ERROR_CODES.HISTORY_LOST };
    }
    return { action: 'retry', code: 'MONGO_TRANSIENT' };
  }
  // One of ours that no branch above handles (a change without a resume token, a bad setup):
  // retrying the same way cannot help. Exit with its code; a restart resumes from the last token.
  if (err instanceof ListenerError) {
    return {
      action: 'fatal',
      code: err.code,
      exitCode: EXIT.FAILED,
      fix: `${err.message}; the listener exits and resumes from its last acknowledged token when restarted`,
    };
  }
  // Not from the driver and not a delivery: a bug or broken input. Exit; the supervisor restarts
  // the listener, which resumes from the last acknowledged token, so nothing is lost.
  return {
    action: 'fatal',
    code: ERROR_CODES.INTERNAL,
    exitCode: EXIT.FAILED,
    fix: 'unexpected error: the listener exits and resumes from its last acknowledged token when restarted; report the logged stack',
  };
}
