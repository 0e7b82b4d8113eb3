/** Public surface of the measurement scenarios (tests and other components' tooling). */
export { loadConfig, SYSTEMS, WORKLOADS, PROFILES, REPO_ROOT } from './config.js';
export type { ScenarioConfig, MatrixConfig, System, Workload, Profile } from './config.js';
export { ScenarioError } from './errors.js';
export type { ScenarioErrorCode } from './errors.js';
export { runOnOneMesh, cellId } from './run.js';
export type { CellSpec, CellResult } from './run.js';
export { writeResults, toCsv, checkTargets, markdownReport } from './report.js';
export type { RunMeta, TargetCheck } from './report.js';
export { PAPER_FIGURES, TARGETS } from './paper.js';
