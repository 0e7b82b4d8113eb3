import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createLogger, REDACT_PATHS, REDACTED, squashError } from './index.js';

const SECRET = 'do-not-log-this-0123456789abcdef-secret';

/** A stream that keeps every line written to it. */
function sink(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  const text = () => chunks.join('');
  const lines = () =>
    text()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { stream, lines, text };
}

/** The object a redact path names, with `value` at its end (`*` becomes an arbitrary key). */
function objectAt(path: string, value: string): { obj: Record<string, unknown>; keys: string[] } {
  const keys = (path.match(/[^.[\]"]+/g) ?? []).map((k) => (k === '*' ? 'config' : k));
  const obj: Record<string, unknown> = {};
  let at = obj;
  keys.forEach((k, i) => {
    if (i === keys.length - 1) at[k] = value;
    else at = at[k] = {} as Record<string, unknown>;
  });
  return { obj, keys };
}

test('log - a secret at each redacted path never reaches the output', () => {
  assert.ok(REDACT_PATHS.length > 10);
  for (const path of REDACT_PATHS) {
    const out = sink();
    const log = createLogger({ level: 'debug', svc: 'test', destination: out.stream });
    const { obj, keys } = objectAt(path, SECRET);
    log.info(obj, 'with a secret');
    log.child({ module: 'child' }).debug(obj, 'from a child');
    assert.ok(!out.text().includes(SECRET), `${path}: the secret is in the output`);
    const lines = out.lines();
    assert.equal(lines.length, 2, path);
    for (const line of lines) {
      const at = keys.reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], line);
      assert.equal(at, REDACTED, `${path}: redacted in place`);
    }
  }
});

test('log - the known secret carriers are on the list', () => {
  for (const p of [
    'meshSecret',
    '*.meshSecret',
    'MISO_MESH_SECRET',
    'MONGODB_URI',
    'secret',
    'req.headers.authorization',
    'req.headers["x-syncmesh-signature"]',
  ]) {
    assert.ok(REDACT_PATHS.includes(p), p);
  }
});

test('log - binds only svc and node, and what is set of them', () => {
  const both = sink();
  createLogger({ level: 'info', svc: 'syncmesh-fn', node: 'n1', destination: both.stream }).info({ n: 1 }, 'hello');
  const [line] = both.lines();
  assert.equal(line?.['svc'], 'syncmesh-fn');
  assert.equal(line?.['node'], 'n1');
  assert.equal(line?.['msg'], 'hello');
  assert.equal(line?.['n'], 1);
  assert.ok(!('pid' in line!) && !('hostname' in line!), 'no pid or hostname');

  const nodeOnly = sink();
  createLogger({ level: 'info', node: 'n2', destination: nodeOnly.stream }).info('x');
  assert.ok(!('svc' in nodeOnly.lines()[0]!));
  assert.equal(nodeOnly.lines()[0]?.['node'], 'n2');
});

test('log - the level filters', () => {
  const out = sink();
  const log = createLogger({ level: 'warn', destination: out.stream });
  log.info('dropped');
  log.warn('kept');
  assert.deepEqual(
    out.lines().map((l) => l['msg']),
    ['kept'],
  );
  const silent = sink();
  createLogger({ level: 'silent', destination: silent.stream }).error('nothing');
  assert.equal(silent.text(), '');
});

/** Runs a child node that logs one line to `destination` with the built package; its stdout and stderr. */
function logFromChild(destination: 'stdout' | 'stderr'): Promise<{ stdout: string; stderr: string }> {
  const index = fileURLToPath(new URL('./index.js', import.meta.url));
  const script = `import { createLogger } from ${JSON.stringify(index)};
const log = createLogger({ level: 'info', node: 'n1', destination: ${JSON.stringify(destination)} });
log.info({ meshSecret: ${JSON.stringify(SECRET)} }, 'from the child');`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(err) : resolve({ stdout, stderr }),
    );
  });
}

test('log - stderr keeps stdout free, stdout is the default', async () => {
  const toErr = await logFromChild('stderr');
  assert.equal(toErr.stdout, '');
  assert.match(toErr.stderr, /"node":"n1".*"msg":"from the child"/);
  assert.ok(!toErr.stderr.includes(SECRET));
  const toOut = await logFromChild('stdout');
  assert.equal(toOut.stderr, '');
  assert.match(toOut.stdout, /"meshSecret":"\[redacted\]"/);
});

test('squashError - ignores anything', () => {
  assert.equal(squashError(new Error('ignored')), undefined);
  assert.equal(squashError(undefined), undefined);
});
