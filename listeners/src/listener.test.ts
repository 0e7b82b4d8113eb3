/**
 * The listener loop against a fake change stream, a fake token store and a scripted function:
 * ordering of acknowledgement and token storage, retries, dead letters and resyncs. The same
 * behaviours run against the test server and a real HTTP stand-in in test/integration/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '@syncmesh-edge/log';
import { MongoServerError, type Document } from 'mongodb';
import { loadConfig } from './config.js';
import type { DeliveryResult, FunctionClient, ResyncRequest } from './delivery.js';
import { DeliveryError, ERROR_CODES } from './errors.js';
import type { ChangeEnvelope, ResumeToken } from './events.js';
import { createListener, type OpenStreamOptions, type StreamLike } from './listener.js';
import type { DeadLetter, StoredPosition, TokenStore } from './tokens.js';

const config = loadConfig({
  SYNCMESH_MESH_SECRET: 'listener-unit-test-mesh-secret-32-bytes+',
  LISTENER_RETRY_BASE_MS: '2',
  LISTENER_RETRY_MAX_MS: '10',
  LISTENER_POLL_MAX_MS: '5',
  LISTENER_BATCH_WAIT_MS: '0',
  LISTENER_DRAIN_TIMEOUT_MS: '2000',
});
const logger = createLogger({ level: 'silent' });
const NS = 'syncmesh.sensor_data';

/** An oplog of raw changes; streams read after their start token. `failWith` makes opening fail. */
class FakeServer {
  changes: Document[] = [];
  failWith: ((opts: OpenStreamOptions) => Error | undefined) | undefined;
  opened: OpenStreamOptions[] = [];

  insert(n: number): void {
    const _id = `id${n}`;
    this.changes.push({ _id: { _data: `T${this.changes.length + 1}` }, operationType: 'insert', documentKey: { _id }, fullDocument: { _id, n } });
  }

  malformedUpdate(): void {
    this.changes.push({ _id: { _data: `T${this.changes.length + 1}` }, operationType: 'update', documentKey: { $set: { n: 0 } }, fullDocument: {} });
  }

  open = (_db: string, _coll: string, opts: OpenStreamOptions): StreamLike => {
    this.opened.push(opts);
    const failure = this.failWith?.(opts);
    let index = opts.startAfter ? this.changes.findIndex((c) => c['_id']._data === opts.startAfter!['_data']) + 1 : this.changes.length;
    let token: ResumeToken | null = null;
    return {
      tryNext: async () => {
        if (failure) throw failure;
        const c = this.changes[index];
        if (!c) return null;
        index++;
        token = c['_id'];
        return c;
      },
      get resumeToken() {
        return token;
      },
      close: async () => {},
    };
  };
}

class MemoryTokens implements TokenStore {
  positions = new Map<string, ResumeToken | null>();
  saves: Array<ResumeToken | null> = [];
  dead: DeadLetter[] = [];
  async load(ns: string): Promise<StoredPosition | null> {
    return this.positions.has(ns) ? { token: this.positions.get(ns)!, updatedAt: new Date() } : null;
  }
  async save(ns: string, token: ResumeToken | null): Promise<void> {
    this.positions.set(ns, token);
    this.saves.push(token);
  }
  async deadLetter(letter: DeadLetter): Promise<void> {
    this.dead.push(letter);
  }
}

/** A function whose answer to each /events call is scripted; records what it acknowledged. */
class ScriptedFunction implements FunctionClient {
  acked: ChangeEnvelope[] = [];
  resyncs: ResyncRequest[] = [];
  calls = 0;
  answer: (call: number) => Promise<void> = async () => {};
  async postEvents(events: readonly ChangeEnvelope[]): Promise<DeliveryResult> {
    await this.answer(++this.calls);
    this.acked.push(...events);
    return { status: 200, applied: events.length };
  }
  async postResync(req: ResyncRequest): Promise<DeliveryResult> {
    this.resyncs.push(req);
    return { status: 202, applied: undefined };
  }
}

async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

function setup(stored?: ResumeToken | null) {
  const server = new FakeServer();
  const tokens = new MemoryTokens();
  if (stored !== undefined) tokens.positions.set(NS, stored);
  const fn = new ScriptedFunction();
  const listener = createListener({ config, logger, openStream: server.open, tokens, functionClient: fn, random: () => 0.5 });
  return { server, tokens, fn, listener, running: listener.run() };
}

test('listener - stores the resume token only after the function acknowledged', async () => {
  const { server, tokens, fn, listener, running } = setup({ _data: 'T0' });
  server.changes.push({ _id: { _data: 'T0' }, operationType: 'insert', documentKey: { _id: 0 }, fullDocument: { _id: 0 } });
  let release!: () => void;
  fn.answer = () => new Promise<void>((r) => (release = r));
  await until(() => server.opened.length === 1, 'stream open');
  server.insert(1);
  server.insert(2);
  await until(() => fn.calls === 1, 'first delivery');
  assert.deepEqual(tokens.saves, [], 'nothing stored while the function has not answered');
  fn.answer = async () => {};
  release();
  await until(() => fn.acked.length === 2, 'both events acknowledged');
  await until(() => tokens.saves.length > 0, 'token stored');
  assert.deepEqual(tokens.positions.get(NS), { _data: 'T3' });
  assert.deepEqual(server.opened[0], { startAfter: { _data: 'T0' } });
  await listener.stop();
  await running;
});

test('listener - retries failed deliveries with backoff and loses nothing', async () => {
  const { server, tokens, fn, listener, running } = setup({ _data: 'T0' });
  server.changes.push({ _id: { _data: 'T0' }, operationType: 'insert', documentKey: { _id: 0 }, fullDocument: { _id: 0 } });
  fn.answer = async (call) => {
    if (call <= 3) throw new DeliveryError(ERROR_CODES.DELIVERY_FAILED, '503', 503);
  };
  for (let i = 1; i <= 5; i++) server.insert(i);
  await until(() => fn.acked.length === 5, 'all five acknowledged');
  assert.deepEqual(
    fn.acked.map((e) => e.key._id),
    ['id1', 'id2', 'id3', 'id4', 'id5'],
  );
  assert.equal(listener.stats()[0]!.retries, 3);
  await until(() => JSON.stringify(tokens.positions.get(NS)) === '{"_data":"T6"}', 'last token stored');
  await listener.stop();
  await running;
});

/** A listener resuming after T0 whose function rejects the first delivery (`status`, a 4xx), with one insert made. */
function firstDeliveryRejected(status: number): ReturnType<typeof setup> {
  const s = setup({ _data: 'T0' });
  s.server.changes.push({ _id: { _data: 'T0' }, operationType: 'delete', documentKey: { _id: 0 } });
  s.fn.answer = async (call) => {
    if (call === 1) throw new DeliveryError(ERROR_CODES.DELIVERY_REJECTED, `POST answered ${status}: bad event`, status);
  };
  s.server.insert(1);
  return s;
}

test('listener - a 4xx rejection is dead-lettered and the position advances', async () => {
  const { server, tokens, fn, listener, running } = firstDeliveryRejected(422);
  await until(() => tokens.dead.length === 1, 'dead letter');
  assert.equal(tokens.dead[0]!.status, 422);
  assert.equal(tokens.dead[0]!.events?.length, 1);
  await until(() => JSON.stringify(tokens.positions.get(NS)) === '{"_data":"T2"}', 'position advanced past the rejected batch');
  server.insert(2);
  await until(() => fn.acked.length === 1, 'next event delivered');
  await listener.stop();
  await running;
});

test('listener - a rejected batch requests a resync of the subscribers instead of drifting silently', async () => {
  const { tokens, fn, listener, running } = firstDeliveryRejected(400);
  await until(() => fn.resyncs.length === 1, 'resync after the dead letter');
  assert.deepEqual(fn.resyncs[0], { db: 'syncmesh', coll: 'sensor_data', reason: 'dead-letter' });
  assert.equal(tokens.dead.length, 1);
  assert.equal(listener.stats()[0]!.resyncs, 1);
  await listener.stop();
  await running;
});

test('listener - lost history restarts from now and requests a resync', async () => {
  const { server, fn, listener, running } = setup({ _data: 'gone' });
  server.failWith = (opts) => (opts.startAfter ? new MongoServerError({ ok: 0, code: 286, errmsg: 'Resume of change stream was not possible' }) : undefined);
  await until(() => fn.resyncs.length === 1, 'resync request');
  assert.deepEqual(fn.resyncs[0], { db: 'syncmesh', coll: 'sensor_data', reason: 'history-lost' });
  assert.deepEqual(server.opened.slice(-1)[0], {}, 'reopened without a token');
  server.insert(1);
  await until(() => fn.acked.length === 1, 'new events still delivered');
  await listener.stop();
  await running;
});

test('listener - a token the server keeps refusing with an unknown code leads to a resync', async () => {
  const { server, fn, listener, running } = setup({ _data: 'from-elsewhere' });
  let refusals = 0;
  server.failWith = (opts) => {
    if (!opts.startAfter) return undefined;
    refusals++;
    return new MongoServerError({ ok: 0, code: 50811, errmsg: 'KeyString format error' });
  };
  await until(() => fn.resyncs.length === 1, 'resync request');
  assert.equal(fn.resyncs[0]!.reason, 'history-lost');
  assert.equal(refusals, 3);
  await listener.stop();
  await running;
});

test('listener - no stored position starts from now and requests a resync', async () => {
  const { fn, tokens, listener, running } = setup();
  await until(() => fn.resyncs.length === 1, 'resync request');
  assert.equal(fn.resyncs[0]!.reason, 'no-position');
  await until(() => tokens.saves.length === 1, 'position recorded');
  assert.equal(tokens.positions.get(NS), null, 'position stays unknown until the first event');
  await listener.stop();
  await running;
});

test('listener - a malformed update requests a resync and the position advances past it', async () => {
  const { server, fn, tokens, listener, running } = setup({ _data: 'T0' });
  server.changes.push({ _id: { _data: 'T0' }, operationType: 'delete', documentKey: { _id: 0 } });
  server.insert(1);
  server.malformedUpdate();
  await until(() => fn.resyncs.length === 1, 'resync');
  assert.equal(fn.resyncs[0]!.reason, 'malformed-update');
  await until(() => JSON.stringify(tokens.positions.get(NS)) === '{"_data":"T3"}', 'token past the update');
  assert.equal(fn.acked.length, 1);
  await listener.stop();
  await running;
});

test('listener - a server without change streams stops the listener with exit code 78', async () => {
  const { server, listener, running } = setup({ _data: 'T0' });
  server.failWith = () => new MongoServerError({ ok: 0, code: 40573, errmsg: 'The $changeStream stage is only supported on replica sets' });
  await assert.rejects(running, (err: Error & { exitCode?: number; code?: string }) => {
    assert.equal(err.exitCode, 78);
    assert.equal(err.code, ERROR_CODES.NOT_REPLICA_SET);
    assert.match(err.message, /--replSet/);
    return true;
  });
  await listener.stop();
  await listener.stop();
});

test('listener - stop gives up at the drain deadline without storing unacknowledged tokens', async () => {
  const quick = loadConfig({
    SYNCMESH_MESH_SECRET: 'listener-unit-test-mesh-secret-32-bytes+',
    LISTENER_DRAIN_TIMEOUT_MS: '50',
    LISTENER_BATCH_WAIT_MS: '0',
    LISTENER_RETRY_BASE_MS: '5',
    LISTENER_RETRY_MAX_MS: '10',
  });
  const server = new FakeServer();
  server.changes.push({ _id: { _data: 'T0' }, operationType: 'delete', documentKey: { _id: 0 } });
  const tokens = new MemoryTokens();
  tokens.positions.set(NS, { _data: 'T0' });
  const fn = new ScriptedFunction();
  fn.answer = async () => {
    throw new DeliveryError(ERROR_CODES.DELIVERY_FAILED, 'down', undefined);
  };
  const listener = createListener({ config: quick, logger, openStream: server.open, tokens, functionClient: fn });
  const running = listener.run();
  await until(() => server.opened.length === 1, 'open');
  server.insert(1);
  await until(() => fn.calls >= 2, 'retrying');
  const { drained } = await listener.stop();
  await running;
  assert.equal(drained, false);
  assert.deepEqual(tokens.saves, []);
});
