/**
 * What a benchmark result needs to say about the machine it ran on, read from the machine at
 * the time of the run (never hard-coded): CPUs this process may use, CPU model, memory, load.
 */
import { availableParallelism, arch, cpus, hostname, loadavg, platform, release, totalmem } from 'node:os';

export interface HostInfo {
  hostname: string;
  /** `platform release`, e.g. "linux 6.1.0-18-amd64". */
  os: string;
  arch: string;
  /** CPUs this process may run on (os.availableParallelism: honours affinity masks). */
  cpus: number;
  cpu_model: string;
  total_memory_bytes: number;
  /** 1, 5 and 15-minute load averages when the metadata was read. */
  load_average: [number, number, number];
  node: string;
}

export function hostInfo(): HostInfo {
  const [l1 = 0, l5 = 0, l15 = 0] = loadavg();
  return {
    hostname: hostname(),
    os: `${platform()} ${release()}`,
    arch: arch(),
    cpus: availableParallelism(),
    cpu_model: cpus()[0]?.model.trim() ?? 'unknown',
    total_memory_bytes: totalmem(),
    load_average: [l1, l5, l15],
    node: process.version,
  };
}
