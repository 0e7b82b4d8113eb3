/**
 * No secret, key or signature ever reaches a log (issue 15). Runs the attack and replication
 * suites again in a child `node --test` with every node logging at debug level, records every
 * signature sent on the wire (SYNCMESH_TEST_WIRE_FILE: the tests' own requests and what the
 * recording proxy saw between nodes), and greps the whole output for them, for the mesh secret
 * and for the per-node keys derived from it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MeshKeys } from '@syncmesh-edge/mesh-auth';
import { MESH_SECRET } from './harness.js';

const here = dirname(fileURLToPath(import.meta.url));
/** This process's environment without the test runner's marker (a child runner would refuse to run). */
function childEnv(): NodeJS.ProcessEnv {
  const { NODE_TEST_CONTEXT: _ctx, ...env } = process.env;
  return env;
}

const SUITES = ['attack-auth.test.js', 'replication.test.js'].map((f) => join(here, f));

test('logs - a debug-level run of the attack and replication suites logs no secret, key or signature', {
  skip: process.env['SYNCMESH_TEST_WIRE_FILE'] ? 'inside the run it checks' : false,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'smr-logs-'));
  const wire = join(dir, 'wire.txt');
  const logFile = join(dir, 'run.log');
  writeFileSync(wire, '');
  const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--test', '--test-reporter=tap', '--test-concurrency=1', ...SUITES],
      { env: { ...childEnv(), TEST_LOG_LEVEL: 'debug', SYNCMESH_TEST_WIRE_FILE: wire }, maxBuffer: 256 * 1024 * 1024, timeout: 15 * 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}\n${stderr}` }),
    );
  });
  writeFileSync(logFile, output);
  assert.equal(code, 0, `the suites failed; see ${logFile}`);
  const logLines = output.split('\n').filter((l) => l.includes('"svc":"syncmesh-fn"'));
  assert.ok(logLines.length > 100, `expected the nodes' debug logs in the output, got ${logLines.length} lines (${logFile})`);
  assert.ok(
    logLines.some((l) => l.includes('"level":20')),
    'debug lines are there',
  );
  assert.ok(
    logLines.some((l) => l.includes('refused a mesh-signed request')),
    'refused signatures are logged (without the signature)',
  );

  const signatures = [...new Set(readFileSync(wire, 'utf8').split('\n').filter(Boolean))];
  assert.ok(signatures.length > 50, `expected the signatures of the run, got ${signatures.length}`);
  for (const sig of signatures) {
    const mac = sig.slice(sig.indexOf('=') + 1);
    if (mac.length >= 16) assert.ok(!output.includes(mac), `a signature seen on the wire is in the log: ${sig.slice(0, 12)}… (${logFile})`);
  }
  assert.doesNotMatch(output, /v[12]=[0-9a-f]{64}/, `something that looks like a signature is in the log (${logFile})`);
  const keys = new MeshKeys(MESH_SECRET);
  const secrets = [MESH_SECRET, Buffer.from(MESH_SECRET).toString('base64'), Buffer.from(MESH_SECRET).toString('hex')];
  for (const id of ['atk-a', 'atk-b', 'atk-c', 'atk-small', 'atk-v1', 'rep-a', 'rep-b', 'rep-c', 'rep-entry', 'rep-down']) {
    secrets.push(keys.keyFor(id, 'http').toString('hex'), keys.keyFor(id, 'http').toString('base64'));
  }
  for (const s of secrets) assert.ok(!output.includes(s), `a secret or derived key is in the log (${logFile})`);
  rmSync(dir, { recursive: true, force: true }); // kept only when an assertion failed, for inspection
});
