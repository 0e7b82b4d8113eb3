/**
 * The function's process (dist/src/main.js) started before its MongoDB is reachable: it keeps
 * retrying (bounded backoff), /readyz answers 503 meanwhile, and once the database comes up the
 * function becomes ready and answers queries (a failed first connect of the driver leaves a
 * closed topology behind; the function must replace it, not fail on it for ever).
 *
 * Needs the test server (make deps); skipped against a real MONGODB_URI (it cannot be started
 * late by the test).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, jsonLines } from '@syncmesh-edge/lab';
import { startTestServer, type TestServer } from '@syncmesh-edge/mongo-test-server';
import { eventually, post, WRITE_KEY } from './harness.js';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'main.js');
const skip = process.env['MONGODB_URI'] ? 'starts its own test server late; not with a real MONGODB_URI' : false;

/** The function's main on 127.0.0.1:PORT with a minimal environment (no key or secret files) plus ENV. */
function spawnFunction(port: number, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [MAIN], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      PORT: String(port),
      HOST: '127.0.0.1',
      SYNCMESH_WRITE_KEY_FILE: '/nonexistent/syncmesh-test/write-key',
      SYNCMESH_MESH_SECRET_FILE: '/nonexistent/syncmesh-test/mesh-secret',
      ...env,
    },
  });
}

/** SIGTERM to a child still running, and wait until it exited. */
async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

async function status(url: string): Promise<number | null> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2_000) })).status;
  } catch {
    return null; // not listening yet
  }
}

test('startup - the function started before MongoDB keeps retrying, is not ready meanwhile, and serves once MongoDB is up', { skip }, async () => {
  const [fnPort, dbPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${fnPort}`;
  let fn: ChildProcess | undefined;
  let db: TestServer | undefined;
  try {
    fn = spawnFunction(fnPort, {
      MONGODB_URI: `mongodb://127.0.0.1:${dbPort}/?directConnection=true`,
      SYNCMESH_NODE_ID: 'late-db',
      SYNCMESH_WRITE_KEY: WRITE_KEY,
      LOG_LEVEL: 'warn',
    });
    let stderr = '';
    let logs = '';
    fn.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    fn.stdout!.setEncoding('utf8').on('data', (c: string) => (logs += c));
    await eventually('the function listens', async () => (await status(`${base}/healthz`)) === 200, 20_000);
    // two failed connects behind it (the first one left a closed topology: the case that stuck before)
    await eventually('two failed connects logged', async () => (logs.match(/MongoDB not reachable yet/g) ?? []).length >= 2, 30_000);
    assert.equal(await status(`${base}/readyz`), 503, 'not ready while MongoDB is down');
    assert.equal(fn.exitCode, null, `the function is still running: ${stderr}`);

    db = await startTestServer({ port: dbPort });
    await eventually('the function becomes ready after MongoDB came up', async () => (await status(`${base}/readyz`)) === 200, 60_000);
    const w = await post(
      `${base}/`,
      {
        query:
          'mutation { addSensors(sensors: [{ sensor_id: 1, lat: 42.7, lon: 23.3, temperature: 21.5, humidity: 40, pressure: 94000, timestamp: "2017-07-01T00:00:00Z" }]) }',
      },
      { write: true },
    );
    assert.equal(w.status, 200, `${JSON.stringify(w.body)}\n${logs.split('\n').slice(-5).join('\n')}`);
    assert.deepEqual(w.body.errors ?? [], []);
    const r = await post(`${base}/`, { query: '{ sensorsAggregate(start_time: "2017-07-01T00:00:00Z", end_time: "2017-07-02T00:00:00Z") { count } }' });
    assert.deepEqual(r.body.errors ?? [], [], JSON.stringify(r.body));
    assert.equal((r.body.data!['sensorsAggregate'] as { count: number }).count, 1);
  } finally {
    await stopProcess(fn);
    await db?.stop();
  }
});

test('startup - a MongoDB URI with credentials from MONGODB_URI_FILE never appears in the environment or the logs (auth refused)', { skip }, async () => {
  // the test server has no authentication: it refuses the SCRAM handshake, so the function keeps
  // retrying and logging the failure; neither the password nor the URI may show up anywhere
  const password = `smf-Pa55-${process.pid}-${Date.now()}`;
  const dir = mkdtempSync(join(tmpdir(), 'smf-uri-'));
  const [fnPort, dbPort] = [await freePort(), await freePort()];
  let fn: ChildProcess | undefined;
  let db: TestServer | undefined;
  try {
    db = await startTestServer({ port: dbPort });
    const uriFile = join(dir, 'mongodb-uri');
    writeFileSync(uriFile, `mongodb://syncmesh-fn:${password}@127.0.0.1:${dbPort}/?directConnection=true&authSource=admin\n`, { mode: 0o600 });
    fn = spawnFunction(fnPort, { MONGODB_URI_FILE: uriFile, SYNCMESH_NODE_ID: 'uri-file', LOG_LEVEL: 'debug' });
    let out = '';
    fn.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
    fn.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
    const base = `http://127.0.0.1:${fnPort}`;
    await eventually('the function listens', async () => (await status(`${base}/healthz`)) === 200, 20_000);
    await eventually('two refused connects logged', async () => (out.match(/MongoDB not reachable yet/g) ?? []).length >= 2, 40_000);
    assert.equal(await status(`${base}/readyz`), 503, 'not ready: the server refused the credentials');
    assert.match(out, /saslStart|auth/i, 'the refusal is logged');
    assert.match(out, /"mongodb":"mongodb:\/\/\*\*\*@127\.0\.0\.1/, 'the URI is logged with its credentials masked');
    assert.equal(out.includes(password), false, 'the password is not in the logs');
    const environ = readFileSync(`/proc/${fn.pid}/environ`, 'utf8');
    assert.equal(environ.includes(password), false, 'the password is not in the environment');
    assert.equal(/\bMONGODB_URI=/.test(environ), false, 'no MONGODB_URI in the environment');
  } finally {
    await stopProcess(fn);
    await db?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('startup - a configuration error exits 78 and names the variable', async () => {
  const fn = spawnFunction(await freePort(), { MONGODB_URI: 'mongodb://127.0.0.1:9/', SYNCMESH_MAX_BODY_BYTES: 'lots' });
  let out = '';
  fn.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  const [code] = (await once(fn, 'exit')) as [number | null];
  assert.equal(code, 78, out);
  const line = jsonLines(out).find((l) => l['code'] === 'EDGE_SYNCMESH_CONFIG');
  assert.ok(line, `a log line with the error code: ${out}`);
  assert.match(String(line['msg']), /SYNCMESH_MAX_BODY_BYTES/);
});

test('startup - SIGTERM with MongoDB still down stops the retries and exits 0, logging the start and the stop', async () => {
  const fnPort = await freePort();
  // port 9 (discard) on loopback: nothing listens, connections are refused
  const fn = spawnFunction(fnPort, { MONGODB_URI: 'mongodb://127.0.0.1:9/?directConnection=true', SYNCMESH_NODE_ID: 'sigterm', SYNCMESH_WRITE_KEY: WRITE_KEY });
  let out = '';
  fn.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  await eventually('the function started', async () => out.includes('"service started"'), 20_000);
  const exited = once(fn, 'exit');
  fn.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  assert.equal(code, 0, out);
  const msgs = jsonLines(out).map((l) => l['msg']);
  assert.ok(msgs.includes('service stopping') && msgs.at(-1) === 'service stopped', msgs.join(' | '));
});
