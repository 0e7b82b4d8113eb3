/**
 * A CPU quota for processes we start (tests that need a slow node): a cgroup of its own with
 * `percent` of one CPU, on cgroup v2 (`cpu.max`) or v1 (the `cpu` hierarchy's
 * `cpu.cfs_quota_us`), whichever this machine has (`stat -fc %T /sys/fs/cgroup`: `cgroup2fs` is
 * v2, `tmpfs` a v1 layout). Needs root and a writable hierarchy; `cpuLimitUnavailable()` says
 * why not, so a test can skip with that reason.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { squashError } from '@syncmesh-edge/log';
import { LabError } from './errors.js';

const ROOT = '/sys/fs/cgroup';
/** statfs type of a cgroup v2 mount (CGROUP2_SUPER_MAGIC). */
const CGROUP2_MAGIC = 0x63677270;
/** The CFS period the quota is a share of, µs. */
const PERIOD_US = 100_000;

export interface CpuLimit {
  /** cgroup version used. */
  readonly version: 1 | 2;
  readonly dir: string;
  /** Moves a process (all its threads) into the group. */
  add(pid: number): void;
  /** CPU time used so far by the processes now in the group (from /proc, µs), and how often the quota held the group back. */
  usage(): { usageUs: number; throttledPeriods: number; periods: number };
  /** Moves the processes back to the root group and removes the group (safe to call twice). */
  remove(): void;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;

/** utime + stime of a process, µs (0 once it is gone). */
function cpuTimeUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_S;
  } catch (err) {
    squashError(err); // the process is gone
    return 0;
  }
}

function version(): 1 | 2 | undefined {
  try {
    if (statfsSync(ROOT).type === CGROUP2_MAGIC) return 2;
    return existsSync(join(ROOT, 'cpu', 'cpu.cfs_quota_us')) ? 1 : undefined;
  } catch {
    return undefined;
  }
}

/** Why a CPU limit cannot be made here, or undefined when it can. */
export function cpuLimitUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (to create a cgroup)';
  const v = version();
  if (v === undefined) return `no cgroup v2 at ${ROOT} and no v1 cpu hierarchy at ${ROOT}/cpu`;
  if (v === 2) {
    const controllers = readFileSync(join(ROOT, 'cgroup.subtree_control'), 'utf8');
    if (!/\bcpu\b/.test(controllers))
      return `the cgroup v2 root does not delegate the cpu controller (${ROOT}/cgroup.subtree_control: '${controllers.trim()}')`;
  }
  return undefined;
}

/** A new cgroup `name` limited to `percent` of one CPU. */
export function createCpuLimit(name: string, percent: number): CpuLimit {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw new LabError('EDGE_LAB_COMMAND_FAILED', `bad cgroup name '${name}'`);
  const why = cpuLimitUnavailable();
  if (why) throw new LabError('EDGE_LAB_TOOL_MISSING', `cannot limit CPU here: ${why}`);
  const v = version()!;
  const dir = v === 2 ? join(ROOT, name) : join(ROOT, 'cpu', name);
  const top = v === 2 ? ROOT : join(ROOT, 'cpu');
  const quota = Math.max(1_000, Math.round((PERIOD_US * percent) / 100));
  mkdirSync(dir, { recursive: true });
  if (v === 2) writeFileSync(join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
  else {
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
  }
  const procs = () => readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  let removed = false;
  return {
    version: v,
    dir,
    add(pid: number) {
      // v1: writing the pid to cgroup.procs moves every thread of it (a JVM has many)
      writeFileSync(join(dir, 'cgroup.procs'), String(pid));
    },
    usage() {
      const stat = Object.fromEntries(
        readFileSync(join(dir, 'cpu.stat'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(/\s+/) as [string, string]),
      );
      let usageUs = 0;
      for (const pid of procs()) usageUs += cpuTimeUs(pid);
      return { usageUs, throttledPeriods: Number(stat['nr_throttled'] ?? 0), periods: Number(stat['nr_periods'] ?? 0) };
    },
    remove() {
      if (removed) return;
      removed = true;
      for (const pid of existsSync(dir) ? procs() : []) {
        try {
          writeFileSync(join(top, 'cgroup.procs'), String(pid));
        } catch (err) {
          squashError(err); // the process ended meanwhile
        }
      }
      try {
        rmdirSync(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    },
  };
}
