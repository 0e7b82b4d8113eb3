import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { CpuMeter, MACHINE, parseCpuGroup, pidCpuMs, statTicks } from './cpu.js';

test('parseCpuGroup - name=pids, and a clear error for anything else', () => {
  assert.deepEqual(parseCpuGroup('gateway=12'), { name: 'gateway', pids: [12] });
  assert.deepEqual(parseCpuGroup('log-shipper=3,4,5'), { name: 'log-shipper', pids: [3, 4, 5] });
  for (const bad of ['gateway', 'gateway=', 'Gateway=1', 'gw=1,x', 'gw=0', '=5']) {
    assert.throws(() => parseCpuGroup(bad), /a CPU group is name=pid/, bad);
  }
});

test('statTicks - utime + stime, also when the command name holds spaces and parentheses', () => {
  const fields = (comm: string) => `42 (${comm}) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 5 1000 10`;
  assert.equal(statTicks(fields('node')), 325);
  assert.equal(statTicks(fields('a b) c')), 325);
  assert.equal(statTicks('garbage'), null);
});

test('CpuMeter - a busy process is charged to its group, an idle one is not; one that exits adds nothing', async () => {
  // each child says "go" once it runs its own code, so start-up is never what is measured
  const child = (code: string) => spawn(process.execPath, ['-e', `process.stdout.write('go'); ${code}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const started = (c: ReturnType<typeof child>) => new Promise((r) => c.stdout!.once('data', r));
  const busy = child('for (;;);');
  const idle = child('setInterval(() => {}, 1000)');
  const brief = child('const end = Date.now() + 100; while (Date.now() < end);');
  const briefExit = new Promise((r) => brief.once('exit', r));
  try {
    await Promise.all([started(busy), started(idle), started(brief)]);
    const meter = new CpuMeter([
      { name: 'busy', pids: [busy.pid!] },
      { name: 'idle', pids: [idle.pid!] },
      { name: 'brief', pids: [brief.pid!] },
    ]);
    const { cpuMs } = await meter.measure(() => Promise.all([briefExit, new Promise((r) => setTimeout(r, 600))]));
    assert.ok(cpuMs.get('busy')! >= 60, `busy used ${cpuMs.get('busy')} ms in 600 ms`);
    assert.ok(cpuMs.get('idle')! <= 20, `idle used ${cpuMs.get('idle')} ms`);
    assert.equal(cpuMs.get('brief'), 0, 'a process that exited meanwhile');
    assert.ok(cpuMs.get(MACHINE)! >= cpuMs.get('busy')! - 20, `machine ${cpuMs.get(MACHINE)} ms`);
    assert.equal(pidCpuMs(brief.pid!), null);
  } finally {
    busy.kill();
    idle.kill();
    brief.kill();
  }
  assert.throws(
    () =>
      new CpuMeter([
        { name: 'a', pids: [1] },
        { name: 'a', pids: [2] },
      ]),
    /given twice/,
  );
  assert.throws(() => new CpuMeter([{ name: MACHINE, pids: [1] }]), /reserved/);
});
