/** @syncmesh-edge/bench-kit: what every `make bench-*` shares. */
export { mean, percentile, percentileOfSorted, summarize } from './stats.js';
export type { Summary } from './stats.js';
export { runFor } from './runner.js';
export type { RunOptions, RunResult } from './runner.js';
export { hostInfo } from './host.js';
export type { HostInfo } from './host.js';
export { resultsDir, resultsPath, writeResults } from './results.js';
export { CpuMeter, MACHINE, machineBusyMs, parseCpuGroup, pidCpuMs } from './cpu.js';
export type { CpuGroup } from './cpu.js';
export { formatNumber, formatTable, printRows, printTable } from './table.js';
export { peakRssMb, statusBytes } from './memory.js';
export { PLOT_SCRIPT, plotPython, plotResults } from './plot.js';
