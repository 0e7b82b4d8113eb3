/** Public surface of the measurement scenarios (tests and other components' tooling). */
export { loadConfig, SYSTEMS, WORKLOADS, PROFILES, REPO_ROOT } from './config.js';
export type { ScenarioConfig, MatrixConfig, System, Workload, Profile } from './config.js';
export { ScenarioError } from './errors.js';
export type { ScenarioErrorCode } from './errors.js';
export { parsePcap, readPcap, buildPcap, tcpFrame } from './pcap.js';
export type { Packet, PcapFile } from './pcap.js';
export { classify } from './classify.js';
export type { Layout, TrafficBreakdown, CapturedInterface } from './classify.js';
export { startCapture } from './capture.js';
export type { PhaseTraffic, CaptureTarget } from './capture.js';
export { runOnOneMesh, cellId } from './run.js';
export type { CellSpec, CellResult } from './run.js';
export { writeResults, toCsv, checkTargets, markdownReport } from './report.js';
export type { RunMeta, TargetCheck } from './report.js';
export { PAPER_FIGURES, TARGETS } from './paper.js';
