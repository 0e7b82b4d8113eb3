/**
 * Memory of a process, read from /proc/<pid>/status: the resident set now (VmRSS) and its peak
 * since the process started (VmHWM, the "high water mark": what a memory budget must allow).
 */
import { readFileSync } from 'node:fs';

/** A `kB` field of /proc/<pid>/status in bytes; null when the process has gone or has no such field. */
export function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null; // the process has exited
  }
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : null;
}

/** Peak resident set of a process since it started, MB (NaN when it has gone). */
export function peakRssMb(pid: number): number {
  const b = statusBytes(pid, 'VmHWM');
  return b === null ? Number.NaN : b / (1024 * 1024);
}
