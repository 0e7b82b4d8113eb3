/**
 * CPU and memory of every process of a measured phase, read from /proc every `intervalMs`:
 * CPU seconds (utime + stime) used during the phase, and resident memory (VmRSS) average and peak
 * (both read by @syncmesh-edge/bench-kit, as every benchmark reads them).
 */
import { pidCpuMs, statusBytes } from '@syncmesh-edge/bench-kit';

export interface WatchedProcess {
  role: string;
  node: string | null;
  pid: number;
}

export interface ProcessUsage extends WatchedProcess {
  cpu_s: number;
  /** Average share of one core over the phase, in percent. */
  cpu_pct: number;
  rss_avg_mb: number;
  rss_max_mb: number;
  samples: number;
}

export interface RoleUsage {
  role: string;
  processes: number;
  cpu_s: number;
  cpu_pct: number;
  rss_max_mb: number;
  /** Peak of the summed RSS of all processes of this role. */
  rss_total_max_mb: number;
}

export interface Usage {
  interval_ms: number;
  duration_ms: number;
  processes: ProcessUsage[];
  roles: RoleUsage[];
}

const MB = 1024 * 1024;
const r1 = (x: number) => Math.round(x * 10) / 10;
const r2 = (x: number) => Math.round(x * 100) / 100;

export interface Sampler {
  /** Adds a process started during the phase (k6). */
  watch(p: WatchedProcess): void;
  stop(): Usage;
}

export function startSampler(procs: readonly WatchedProcess[], intervalMs: number): Sampler {
  const t0 = performance.now();
  const state = new Map<number, { p: WatchedProcess; first: number | null; last: number | null; rss: number[] }>();
  const sampleOne = (s: { p: WatchedProcess; first: number | null; last: number | null; rss: number[] }) => {
    const t = pidCpuMs(s.p.pid);
    if (t !== null) {
      s.first ??= t;
      s.last = t;
    }
    const r = statusBytes(s.p.pid, 'VmRSS');
    if (r !== null) s.rss.push(r);
  };
  const watch = (p: WatchedProcess) => {
    const s = { p, first: null, last: null, rss: [] as number[] };
    state.set(p.pid, s);
    sampleOne(s);
  };
  procs.forEach(watch);
  const totals: Map<string, number>[] = [];
  const tick = () => {
    const byRole = new Map<string, number>();
    for (const s of state.values()) {
      sampleOne(s);
      byRole.set(s.p.role, (byRole.get(s.p.role) ?? 0) + (s.rss[s.rss.length - 1] ?? 0));
    }
    totals.push(byRole);
  };
  const timer = setInterval(tick, intervalMs);
  return {
    watch,
    stop() {
      clearInterval(timer);
      tick();
      const duration = performance.now() - t0;
      const processes = [...state.values()].map((s) => {
        const cpu = s.first !== null && s.last !== null ? (s.last - s.first) / 1000 : 0;
        return {
          ...s.p,
          cpu_s: r2(cpu),
          cpu_pct: r1((100 * cpu) / (duration / 1000)),
          rss_avg_mb: r1(s.rss.reduce((a, b) => a + b, 0) / Math.max(1, s.rss.length) / MB),
          rss_max_mb: r1(Math.max(0, ...s.rss) / MB),
          samples: s.rss.length,
        };
      });
      const roles = [...new Set(processes.map((p) => p.role))].map((role) => {
        const ps = processes.filter((p) => p.role === role);
        const cpu = r2(ps.reduce((a, p) => a + p.cpu_s, 0));
        return {
          role,
          processes: ps.length,
          cpu_s: r2(cpu),
          cpu_pct: r1((100 * cpu) / (duration / 1000)),
          rss_max_mb: r1(Math.max(0, ...ps.map((p) => p.rss_max_mb))),
          rss_total_max_mb: r1(Math.max(0, ...totals.map((t) => t.get(role) ?? 0)) / MB),
        };
      });
      return { interval_ms: intervalMs, duration_ms: Math.round(duration), processes, roles };
    },
  };
}
