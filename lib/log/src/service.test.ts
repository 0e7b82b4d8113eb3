/**
 * runService against real processes: a small service built on it is spawned and signalled, and
 * its exit code and log lines are checked.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { CodedError } from './errors.js';
import { EXIT, exitCodeOf, replyError } from './service.js';

const SERVICE = pathToFileURL(`${import.meta.dirname}/service.js`).href;

/**
 * The demo service: MODE=config throws from loadConfig, start-fail throws from start, fatal
 * rejects `done` after start, hang never finishes stop(); otherwise it runs until a signal.
 */
const DEMO = `
import { runService } from ${JSON.stringify(SERVICE)};
const mode = process.env.MODE;
class DemoError extends Error { constructor(code, m) { super(m); this.code = code; } }
await runService({
  svc: 'demo',
  loadConfig() {
    if (mode === 'config') throw new DemoError('EDGE_DEMO_CONFIG', 'DEMO_PORT must be an integer');
    return { mode };
  },
  logger: () => ({ level: 'info', node: 'n1' }),
  drainMs: () => 200,
  async start({ log }) {
    if (mode === 'start-fail') throw new Error('port in use');
    log.info('demo up');
    const alive = setInterval(() => {}, 60_000); // a server would keep the process alive
    return {
      done: mode === 'fatal' ? new Promise((_, reject) => setTimeout(() => reject(Object.assign(new Error('gone'), { exitCode: 78 })), 50)) : undefined,
      stop: () => (mode === 'hang' ? new Promise(() => {}) : new Promise((r) => setTimeout(r, 20)).then(() => clearInterval(alive))),
    };
  },
});
`;

async function runDemo(mode: string, signal?: NodeJS.Signals): Promise<{ code: number | null; lines: Record<string, unknown>[] }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', DEMO], { env: { ...process.env, MODE: mode }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    if (signal && out.includes('service started')) child.kill(signal);
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return {
    code,
    lines: out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

test('service - a configuration error exits 78 with its code and message logged', async () => {
  const { code, lines } = await runDemo('config');
  assert.equal(code, EXIT.CONFIG);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!['code'], 'EDGE_DEMO_CONFIG');
  assert.equal(lines[0]!['svc'], 'demo');
  assert.match(String(lines[0]!['msg']), /DEMO_PORT must be an integer/);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`service - ${signal} drains and exits 0, with a line on start and on stop`, async () => {
    const { code, lines } = await runDemo('run', signal);
    assert.equal(code, EXIT.OK);
    const msgs = lines.map((l) => l['msg']);
    assert.deepEqual(msgs, ['demo up', 'service started', 'service stopping', 'service stopped']);
    assert.equal(lines[2]!['reason'], signal);
    assert.equal(lines[3]!['exitCode'], 0);
    assert.ok(lines.every((l) => l['svc'] === 'demo' && l['node'] === 'n1'));
  });
}

test('service - a start that throws exits 1', async () => {
  const { code, lines } = await runDemo('start-fail');
  assert.equal(code, EXIT.FAILED);
  assert.ok(lines.some((l) => l['msg'] === 'service failed to start'));
  assert.equal(lines.at(-1)!['msg'], 'service stopped');
});

test("service - a fatal error while running exits with the error's exit code", async () => {
  const { code, lines } = await runDemo('fatal');
  assert.equal(code, 78);
  assert.ok(lines.some((l) => l['msg'] === 'gone' && l['level'] === 60));
});

test('service - a stop that does not finish by the drain deadline exits 1', async () => {
  const { code, lines } = await runDemo('hang', 'SIGTERM');
  assert.equal(code, EXIT.FAILED);
  assert.ok(lines.some((l) => String(l['msg']).includes('did not stop by its drain deadline')));
});

test('service - exitCodeOf: an exitCode wins, a *_CONFIG code is 78, anything else 1', () => {
  assert.equal(exitCodeOf(Object.assign(new Error('x'), { exitCode: 78 })), 78);
  assert.equal(exitCodeOf(new CodedError('EDGE_MISO_CONFIG', 'bad')), EXIT.CONFIG);
  assert.equal(exitCodeOf(new CodedError('EDGE_MISO_STORE', 'down')), EXIT.FAILED);
  assert.equal(exitCodeOf('a string'), EXIT.FAILED);
});

test('service - replyError answers the coded JSON envelope', async () => {
  const server: Server = createServer((_req, res) => replyError(res, 404, 'EDGE_DEMO_NOT_FOUND', 'no endpoint at GET /x', ['GET /healthz']));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), {
      errors: [{ message: 'no endpoint at GET /x', extensions: { code: 'EDGE_DEMO_NOT_FOUND', allowed: ['GET /healthz'] } }],
    });
  } finally {
    server.close();
  }
});
