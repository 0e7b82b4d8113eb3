/**
 * Async invocations through the real (patched) gateway: POST /async-function/<name> is stored
 * in JetStream (gateway patch 0003), the async worker runs it through the gateway, and the
 * "provider" behind the gateway is this test's HTTP server, which plays the functions and counts
 * every call by X-Call-Id. The worker and nats-server are killed (-9) and restarted while calls
 * flow: every accepted call (202) must end done with exactly one successful run, or in the
 * dead-letter stream; a failing call is retried with growing delays.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { nkeyAuthenticator } from '@nats-io/nats-core';
import { fromSeed } from '@nats-io/nkeys';
import { connect } from '@nats-io/transport-node';
import { createTestNetwork, freePort, httpOk, inNetns, type Service, startService, tail, type TestNetwork, waitFor } from '@syncmesh-edge/lab';
import { nkeyFromSeed } from '../../src/identity.js';
import { renderNatsConfig } from '../../src/nats-config.js';
import { GATEWAY_BIN, NATS_SERVER_BIN, isRoot, skipReason } from '../../src/testing/bins.js';
import type { CallStatus } from '../../src/worker.js';

const skip = skipReason({ gateway: true }) || (!isRoot && 'needs root: the gateway listens on fixed ports, so it runs in its own network namespace');
const PREFIX = `${process.env['COORDINATION_TEST_PREFIX'] ?? 'sca'}${process.pid % 10000}`;
const WORKER_MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
const MAX_ATTEMPTS = 4;

describe('coordination - async invocations on JetStream through the gateway', { skip, timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'coord-async-'));
  let net = '';
  let nsHost = '';
  let network: TestNetwork | undefined;
  /** The one namespace: nats-server and the gateway (which listens on fixed ports). */
  const ns = () => network!.namespaces[0]!;
  let nats: Service | undefined;
  let gateway: Service | undefined;
  let worker: Service | undefined;
  let provider: Server;
  let providerPort = 0;
  let statusPort = 0;
  const seed = nkeyFromSeed(randomBytes(32));
  const seedFile = join(dir, 'client.nk');
  /** call id -> times (ms) the function was entered, and how many runs succeeded */
  const runs = new Map<string, { at: number[]; ok: number }>();
  const callbacks: { callId: string; status: string; body: string }[] = [];
  /** every call the gateway accepted (202), the warm-up included */
  const accepted: { fn: string; id: string }[] = [];

  const startNats = () => {
    nats = startService('nats', inNetns(ns(), [NATS_SERVER_BIN, '-c', join(dir, 'nats.conf')]), join(dir, 'nats.log'), process.env);
    return waitFor('nats-server', () => httpOk(`http://${nsHost}:8222/healthz`), 30_000);
  };
  const startWorker = () => {
    worker = startService('worker', [process.execPath, WORKER_MAIN], join(dir, 'worker.log'), {
      ...process.env,
      ASYNC_WORKER_NATS_URL: `nats://${nsHost}:4222`,
      ASYNC_WORKER_NKEY_SEED_FILE: seedFile,
      ASYNC_WORKER_GATEWAY_URL: `http://${nsHost}:8080`,
      ASYNC_WORKER_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      ASYNC_WORKER_RETRY_BASE_MS: '200',
      ASYNC_WORKER_RETRY_MAX_MS: '2000',
      ASYNC_WORKER_CALL_TIMEOUT_MS: '5000',
      ASYNC_WORKER_CONCURRENCY: '4',
      ASYNC_WORKER_CALLBACK_ALLOW: `http://${net}.1:${providerPort}/callback/`,
      ASYNC_WORKER_STATUS_ADDR: `127.0.0.1:${statusPort}`,
      LOG_LEVEL: 'info',
    });
    return waitFor(
      'async worker ready',
      () => httpOk(`http://127.0.0.1:${statusPort}/readyz`),
      30_000,
      () => {
        if (worker?.exited()) throw new Error(`worker exited: ${tail(worker.log, 10)}`);
      },
    );
  };
  const status = async (id: string): Promise<CallStatus | null> => {
    const res = await fetch(`http://127.0.0.1:${statusPort}/status/${id}`);
    return res.status === 200 ? ((await res.json()) as CallStatus) : null;
  };
  const post = async (fn: string, body: string, hdrs: Record<string, string> = {}): Promise<{ status: number; callId: string | null }> => {
    try {
      const res = await fetch(`http://${nsHost}:8080/async-function/${fn}`, { method: 'POST', body, headers: hdrs, signal: AbortSignal.timeout(10_000) });
      await res.body?.cancel();
      return { status: res.status, callId: res.headers.get('x-call-id') };
    } catch {
      return { status: 0, callId: null };
    }
  };

  before(async () => {
    writeFileSync(seedFile, seed, { mode: 0o600 });
    network = await createTestNetwork(PREFIX, 58, 1);
    net = network.net;
    nsHost = network.hosts[0]!;
    // the "provider": /function/<name> plays the functions
    provider = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://p');
        if (url.pathname.startsWith('/system/')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('[]');
          return;
        }
        if (url.pathname.startsWith('/callback/')) {
          callbacks.push({
            callId: String(req.headers['x-call-id']),
            status: String(req.headers['x-function-status']),
            body: Buffer.concat(chunks).toString(),
          });
          res.end();
          return;
        }
        const fn = url.pathname.split('/')[2] ?? '';
        const id = String(req.headers['x-call-id'] ?? '');
        const r = runs.get(id) ?? { at: [], ok: 0 };
        runs.set(id, r);
        r.at.push(Date.now());
        const answer = (status: number) => {
          if (status < 300) r.ok++;
          res.writeHead(status);
          res.end(`${fn}:${Buffer.concat(chunks).toString()}`);
        };
        if (fn === 'slow') setTimeout(() => answer(200), 150);
        else if (fn === 'flaky') answer(r.at.length < 3 ? 503 : 200);
        else if (fn === 'broken') answer(500);
        else answer(200);
      });
    });
    await new Promise<void>((r) => provider.listen(0, `${net}.1`, r));
    providerPort = (provider.address() as { port: number }).port;
    statusPort = await freePort();
    writeFileSync(
      join(dir, 'nats.conf'),
      renderNatsConfig({
        server_name: 'async-test',
        role: 'core',
        client: { host: '0.0.0.0', port: 4222 },
        monitor: { host: '0.0.0.0', port: 8222 },
        jetstream: { store_dir: join(dir, 'js'), domain: 'node' },
        users: [fromSeed(new TextEncoder().encode(seed)).getPublicKey()],
      }),
    );
    await startNats();
    await startWorker();
    gateway = startService('gateway', inNetns(ns(), [GATEWAY_BIN]), join(dir, 'gateway.log'), {
      ...process.env,
      functions_provider_url: `http://${net}.1:${providerPort}/`,
      faas_nats_address: '127.0.0.1',
      faas_nats_port: '4222',
      faas_nats_jetstream: 'true',
      faas_nats_channel: 'faas-request',
      faas_nats_nkey_seed_file: seedFile,
    });
    await waitFor(
      'gateway',
      async () => {
        const r = await post('ok', 'warm-up');
        if (r.status === 202 && r.callId) accepted.push({ fn: 'ok', id: r.callId });
        return r.status === 202;
      },
      30_000,
      () => {
        if (gateway?.exited()) throw new Error(`gateway exited: ${tail(gateway.log, 10)}`);
      },
    );
  });

  after(async () => {
    await worker?.stop();
    await gateway?.stop();
    await nats?.stop();
    provider?.close();
    await network?.remove();
  });

  test('coordination - every accepted call runs exactly once or is dead-lettered, across kill -9 of the worker and of nats-server', async () => {
    let refused = 0;
    const submit = async (n: number, fn = 'slow') => {
      for (let i = 0; i < n; i++) {
        const r = await post(fn, `call-${accepted.length}`);
        if (r.status === 202 && r.callId) accepted.push({ fn, id: r.callId });
        else refused++;
      }
    };
    await submit(20);
    worker!.child.kill('SIGKILL');
    await worker!.stop(0);
    await submit(20); // accepted while no worker runs
    await startWorker();
    await submit(10);
    nats!.child.kill('SIGKILL');
    await nats!.stop(0);
    await submit(5); // NATS down: the gateway refuses (503), nothing is accepted
    await startNats();
    await waitFor(
      'gateway publishes again',
      async () => {
        const r = await post('slow', `call-${accepted.length}`);
        if (r.status === 202 && r.callId) accepted.push({ fn: 'slow', id: r.callId });
        return r.status === 202;
      },
      30_000,
    );
    await submit(10);
    await submit(1, 'flaky');
    await submit(1, 'broken');
    const finals = new Map<string, CallStatus>();
    await waitFor(
      `${accepted.length} calls done or dead`,
      async () => {
        for (const a of accepted) {
          if (finals.has(a.id)) continue;
          const s = await status(a.id);
          if (s && (s.state === 'done' || s.state === 'dead')) finals.set(a.id, s);
        }
        return finals.size === accepted.length;
      },
      90_000,
    );
    const js = await jetstreamManager(await connect({ servers: `nats://${nsHost}:4222`, authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)) }));
    const dlq = (await js.streams.info('FAAS_ASYNC_DLQ')).state.messages;
    const done = [...finals.values()].filter((s) => s.state === 'done');
    const dead = [...finals.values()].filter((s) => s.state === 'dead');
    const twice = accepted.filter((a) => (runs.get(a.id)?.ok ?? 0) > 1);
    const doneButNotRun = done.filter((s) => (runs.get(s.call_id)?.ok ?? 0) !== 1);
    const reasons = dead.map((s) => s.dead_reason).join(',');
    console.log(
      `# accepted ${accepted.length}, refused ${refused} (NATS down: 503); done ${done.length}, dead ${dead.length} (${reasons}); dead-letter stream ${dlq} messages`,
    );
    assert.ok(refused >= 5, 'calls sent while NATS was down are refused, not accepted');
    assert.deepEqual(twice, [], 'no call succeeded twice');
    assert.deepEqual(doneButNotRun, [], 'every done call ran successfully exactly once');
    assert.equal(dlq, dead.length, 'every dead call is in the dead-letter stream, once');
    assert.ok(
      dead.every((s) => s.dead_reason === 'interrupted' || s.function === 'broken'),
      `only interrupted calls and the broken function are dead: ${reasons}`,
    );
    const flaky = done.find((s) => s.function === 'flaky')!;
    assert.equal(flaky.attempts, 3, 'the flaky call succeeded at its third attempt');
    const at = runs.get(flaky.call_id)!.at;
    const gaps = [at[1]! - at[0]!, at[2]! - at[1]!];
    console.log(`# flaky: attempts at +0, +${gaps[0]} ms, +${gaps[0]! + gaps[1]!} ms (backoff base 200 ms: retry n waits [100, 200] then [200, 400] ms)`);
    assert.ok(gaps[0]! >= 100 && gaps[1]! >= 200, `retried with backoff: gaps ${gaps}`);
    const broken = dead.find((s) => s.function === 'broken')!;
    assert.equal(broken.attempts, MAX_ATTEMPTS);
    assert.equal(runs.get(broken.call_id)!.at.length, MAX_ATTEMPTS, 'the broken call ran once per attempt, then was dead-lettered');
  });

  test('coordination - callbacks only to allowed URLs; bad input refused with its status', async () => {
    const ok = await post('ok', 'with-callback', { 'X-Callback-Url': `http://${net}.1:${providerPort}/callback/x` });
    const refused = await post('ok', 'evil-callback', { 'X-Callback-Url': 'http://169.254.169.254/latest/meta-data' });
    assert.equal(ok.status, 202);
    assert.equal(refused.status, 202);
    await waitFor('both calls done', async () => (await status(ok.callId!))?.state === 'done' && (await status(refused.callId!))?.state === 'done', 30_000);
    assert.equal((await status(ok.callId!))?.callback, 'sent');
    assert.equal((await status(refused.callId!))?.callback, 'refused');
    assert.deepEqual(
      callbacks.map((c) => [c.callId, c.status, c.body]),
      [[ok.callId, '200', 'ok:with-callback']],
    );
    const big = await post('ok', 'x'.repeat(256_001));
    assert.equal(big.status, 413, 'a body over 256,000 bytes is refused with 413');
    const bad = await fetch(`http://127.0.0.1:${statusPort}/status/${encodeURIComponent('../etc')}`);
    assert.equal(bad.status, 400);
    type Coded = { errors: { extensions: { code: string } }[] };
    assert.equal(((await bad.json()) as Coded).errors[0]!.extensions.code, 'EDGE_COORDINATION_BAD_CALL_ID');
    const unknown = await fetch(`http://127.0.0.1:${statusPort}/status/no-such-call`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as Coded).errors[0]!.extensions.code, 'EDGE_COORDINATION_UNKNOWN_CALL');
  });
});
