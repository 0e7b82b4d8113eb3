/**
 * The agent's process boundary (runService, @syncmesh-edge/log/service): a configuration error
 * exits 78 with its code logged, SIGTERM drains and exits 0 with a line on start and on stop.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { jsonLines } from '@syncmesh-edge/lab';
import { AGENT_MAIN, AGENT_NODE_FLAGS, spawnAgent } from '@syncmesh-edge/miso-agent/testing';

test('process - a configuration error exits 78 and names the variable', async () => {
  const proc = spawn(process.execPath, [...AGENT_NODE_FLAGS, AGENT_MAIN], {
    env: { PATH: process.env['PATH'] ?? '', MISO_NODE_ID: 'bad-config', MISO_MESH_SECRET: 'too-short' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const [code] = (await once(proc, 'exit')) as [number | null];
  assert.equal(code, 78, stderr);
  const line = jsonLines(stderr).find((l) => l['code'] === 'EDGE_MISO_CONFIG');
  assert.ok(line, `a log line with the error code: ${stderr}`);
  assert.match(String(line['msg']), /MISO_MESH_SECRET/);
  assert.equal(line['svc'], 'miso-agent');
});

test('process - SIGTERM drains and exits 0, logging the start and the stop', async () => {
  const agent = await spawnAgent({ nodeId: 'sigterm', env: { LOG_LEVEL: 'info' } });
  const exited = once(agent.proc, 'exit');
  await agent.stop();
  const [code] = (await exited) as [number | null];
  assert.equal(code, 0);
  const msgs = jsonLines(agent.stderr.join('')).map((l) => l['msg']);
  for (const m of ['service started', 'service stopping', 'service stopped']) assert.ok(msgs.includes(m), `${m} in ${msgs.join(' | ')}`);
});
