/**
 * Where a benchmark's CPU goes: the CPU time (user + system, every thread) of named groups of
 * processes, read from /proc/<pid>/stat before and after a run, and the whole machine's busy
 * time from /proc/stat. Latency says how long a request took; this says which process paid for
 * it, which is what decides throughput once the cores are busy.
 *
 * A group is named processes given by pid ("gateway=1234", "supervisor=5,6,7"). Only the
 * processes' own time counts (children they waited for are not added), so a group should list
 * long-lived processes.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface CpuGroup {
  name: string;
  pids: number[];
}

const GROUP_NAME = /^[a-z][a-z0-9_.-]*$/;

/** Parses "name=pid[,pid...]" (a lowercase name; at least one positive pid). */
export function parseCpuGroup(spec: string): CpuGroup {
  const m = /^([^=]+)=([\d,]+)$/.exec(spec);
  const pids = m ? m[2]!.split(',').filter(Boolean).map(Number) : [];
  if (!m || !GROUP_NAME.test(m[1]!) || pids.length === 0 || pids.some((p) => !Number.isInteger(p) || p <= 0)) {
    throw new Error(`a CPU group is name=pid[,pid...] (name: lowercase letters, digits, _ . -), got ${JSON.stringify(spec)}`);
  }
  return { name: m[1]!, pids };
}

let ticksPerSecond: number | undefined;

/** USER_HZ: the unit of /proc's CPU times (getconf CLK_TCK; 100 on Linux when it cannot be asked). */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** utime + stime of one process in clock ticks, from the text of /proc/<pid>/stat (null: unreadable). */
export function statTicks(stat: string): number | null {
  // the command name (field 2) is in parentheses and may hold spaces or ')': fields restart after the last ')'
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime and stime are fields 14 and 15
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : null;
}

/** CPU time used so far by one process, ms (null: it has gone). */
export function pidCpuMs(pid: number): number | null {
  try {
    const ticks = statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return ticks === null ? null : (ticks * 1000) / clockTicks();
  } catch {
    return null; // the process has exited
  }
}

/** Busy CPU time of the whole machine so far, ms, summed over its CPUs (/proc/stat; idle and iowait excluded). */
export function machineBusyMs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  const busy = (cpu[0] ?? 0) + (cpu[1] ?? 0) + (cpu[2] ?? 0) + (cpu[5] ?? 0) + (cpu[6] ?? 0) + (cpu[7] ?? 0);
  return (busy * 1000) / clockTicks();
}

/** The name under which the machine's busy time appears in a meter's readings. */
export const MACHINE = 'machine';

type Reading = { pids: Map<number, number | null>; machine: number };

/**
 * Reads every group's CPU time at once. `measure(fn)` runs fn and returns what each group (and
 * the machine) used meanwhile, in ms. A process that exits meanwhile adds nothing (its time
 * before it exited is lost with it: give long-lived processes).
 */
export class CpuMeter {
  constructor(readonly groups: readonly CpuGroup[]) {
    const names = new Set<string>();
    for (const g of groups) {
      if (names.has(g.name) || g.name === MACHINE) throw new Error(`CPU group ${JSON.stringify(g.name)} given twice (or reserved)`);
      names.add(g.name);
    }
  }

  private read(): Reading {
    const pids = new Map<number, number | null>();
    for (const g of this.groups) for (const p of g.pids) pids.set(p, pidCpuMs(p));
    return { pids, machine: machineBusyMs() };
  }

  async measure<T>(fn: () => Promise<T>): Promise<{ result: T; cpuMs: Map<string, number> }> {
    const before = this.read();
    const result = await fn();
    const after = this.read();
    const used = (pid: number) => {
      const [a, b] = [before.pids.get(pid), after.pids.get(pid)];
      return a != null && b != null ? b - a : 0;
    };
    const cpuMs = new Map<string, number>(this.groups.map((g) => [g.name, g.pids.reduce((s, p) => s + used(p), 0)]));
    cpuMs.set(MACHINE, after.machine - before.machine);
    return { result, cpuMs };
  }
}
