/**
 * @syncmesh-edge/miso-agent: the MISO agent as a library (the process is src/main.ts).
 * The CRDT core is exported from src/crdt/index.ts; the SDK is @syncmesh-edge/miso-sdk.
 */
export { buildAgentApp } from './app.js';
export type { AgentApp } from './app.js';
export { MisoAgent } from './agent/agent.js';
export { AgentMetrics } from './agent/metrics.js';
export { loadConfig } from './config.js';
export type { AgentConfig } from './config.js';
export { MisoError } from './errors.js';
export type { MisoErrorCode } from './errors.js';
export { ReplicaState } from './sync/state.js';
export type { Entry, WireEntry } from './sync/state.js';
