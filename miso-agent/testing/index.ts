/** @syncmesh-edge/miso-agent/testing: the agent's launcher for tests and benchmarks (never shipped). */
export { AGENT_MAIN, AGENT_NODE_FLAGS, CLIENT_DEADLINE_MS, READY_TIMEOUT_MS, spawnAgent, TEST_SECRET, waitConverged } from './launcher.js';
export type { AgentProc, AgentSpec } from './launcher.js';
