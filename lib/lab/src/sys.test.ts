import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAlive, parseProcNetTcp, pool, portTaken, processStartTime } from './sys.js';

test('sys - /proc/net/tcp listeners', () => {
  const text = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0',
    '   1: 0100007F:1F91 0100007F:A000 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0',
    '   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0',
  ].join('\n');
  const l = parseProcNetTcp(text);
  assert.deepEqual(l, [
    { addr: '127.0.0.1', port: 8080 },
    { addr: '0.0.0.0', port: 80 },
  ]);
  assert.equal(portTaken(l, '127.0.0.1', 8080), true);
  assert.equal(portTaken(l, '10.1.2.1', 80), true, 'a wildcard listener takes the port on every address');
  assert.equal(portTaken(l, '10.1.2.1', 8080), false);
});

test('sys - a process is identified by pid and start time', () => {
  const st = processStartTime(process.pid);
  assert.ok(st !== null && st > 0);
  assert.equal(isAlive({ pid: process.pid, startTime: st }), true);
  assert.equal(isAlive({ pid: process.pid, startTime: st + 1 }), false, 'a reused pid is not ours');
});

test('sys - pool runs at most `limit` at a time and keeps order', async () => {
  let running = 0;
  let peak = 0;
  const out = await pool([1, 2, 3, 4, 5], 2, async (x) => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setImmediate(r));
    running--;
    return x * 10;
  });
  assert.deepEqual(out, [10, 20, 30, 40, 50]);
  assert.equal(peak, 2);
});
