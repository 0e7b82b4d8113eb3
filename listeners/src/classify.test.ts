import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoNetworkError, MongoServerError, MongoServerSelectionError, MongoParseError, MongoTopologyClosedError } from 'mongodb';
import { EXIT } from '@syncmesh-edge/log/service';
import { classifyError, RESUME_REFUSALS_BEFORE_RESYNC } from './classify.js';
import { DeliveryError, ERROR_CODES, ListenerError } from './errors.js';

const server = (code: number | undefined, errmsg: string) => new MongoServerError({ ok: 0, errmsg, ...(code === undefined ? {} : { code }) });

test('classify - not a replica set is fatal with exit 78 and a fix', () => {
  for (const err of [
    server(40573, 'The $changeStream stage is only supported on replica sets'),
    server(undefined, 'The $changeStream stage is only supported on replica sets'),
  ]) {
    const v = classifyError(err);
    assert.equal(v.action, 'fatal');
    assert.equal(v.action === 'fatal' && v.exitCode, EXIT.CONFIG);
    assert.equal(v.code, ERROR_CODES.NOT_REPLICA_SET);
    assert.match(v.action === 'fatal' ? v.fix : '', /replSet/);
  }
});

test('classify - lost history and unknown tokens mean resync', () => {
  for (const code of [286, 280, 260]) assert.equal(classifyError(server(code, 'x')).action, 'resync', `code ${code}`);
  const testServer = server(undefined, 'Unknown error: For input string: "8200000000000000002B" under radix 16');
  assert.equal(classifyError(testServer, { resuming: true }).action, 'resync');
  assert.equal(classifyError(testServer, { resuming: false }).action, 'retry');
});

test('classify - network, server selection and unlisted server errors are retried', () => {
  assert.equal(classifyError(new MongoNetworkError('connection reset')).action, 'retry');
  assert.equal(classifyError(new MongoServerSelectionError('no server', { type: 'Unknown', servers: new Map() } as never)).action, 'retry');
  assert.equal(classifyError(server(43, 'cursor not found')).action, 'retry');
  assert.equal(classifyError(server(91, 'shutdown in progress')).action, 'retry');
  // after a failed first connect the driver closes its topology; the next call reconnects
  assert.equal(classifyError(new MongoTopologyClosedError()).action, 'retry');
});

test('classify - authentication and bad URIs are fatal', () => {
  assert.equal(classifyError(server(18, 'Authentication failed')).action, 'fatal');
  assert.equal(classifyError(server(13, 'not authorized')).action, 'fatal');
  assert.equal(classifyError(new MongoParseError('bad uri')).action, 'fatal');
});

test('classify - 5xx, network failures and configuration 4xx are retried; other 4xx rejected', () => {
  const d = (status: number | undefined) => new DeliveryError(ERROR_CODES.DELIVERY_FAILED, 'x', status);
  for (const s of [undefined, 500, 502, 503, 504, 401, 403, 404, 408, 429]) assert.equal(classifyError(d(s)).action, 'retry', `status ${s}`);
  for (const s of [400, 405, 409, 413, 422]) assert.equal(classifyError(d(s)).action, 'reject', `status ${s}`);
});

test('classify - errors that are neither MongoDB nor delivery are fatal (bugs restart from the last token)', () => {
  const v = classifyError(new TypeError('boom'));
  assert.equal(v.action, 'fatal');
  assert.equal(v.code, ERROR_CODES.INTERNAL);
});

test('classify - a token refused again and again with an unknown code counts as lost history', () => {
  const refused = server(50811, 'KeyString format error');
  const n = RESUME_REFUSALS_BEFORE_RESYNC;
  assert.equal(classifyError(refused, { resuming: true, resumeRefusals: n - 1 }).action, 'retry');
  assert.equal(classifyError(refused, { resuming: true, resumeRefusals: n }).action, 'resync');
  assert.equal(classifyError(refused, { resuming: false, resumeRefusals: n }).action, 'retry', 'only when resuming');
  assert.equal(classifyError(server(91, 'shutdown in progress'), { resuming: true, resumeRefusals: n }).action, 'retry', 'transient codes never count');
  const labelled = server(999, 'labelled');
  labelled.addErrorLabel('ResumableChangeStreamError');
  assert.equal(classifyError(labelled, { resuming: true, resumeRefusals: n }).action, 'retry');
});

test('classify - a change without a resume token is fatal with its own code, not INTERNAL', () => {
  const v = classifyError(new ListenerError(ERROR_CODES.MALFORMED_EVENT, 'no resume token'));
  assert.equal(v.action, 'fatal');
  assert.equal(v.code, ERROR_CODES.MALFORMED_EVENT);
});
