/** @syncmesh-edge/lab: the lab's shared code for scenarios/mesh and scenarios/measure (never shipped). */
export { LabError, squashError } from './errors.js';
export type { LabErrorCode } from './errors.js';
export {
  DEFAULT_RUN_TIMEOUT_MS,
  delay,
  freePort,
  hostListeners,
  httpOk,
  isAlive,
  parseProcNetTcp,
  pool,
  portTaken,
  processStartTime,
  pssBytes,
  rssBytes,
  run,
  startDetached,
  startService,
  stopProcess,
  tail,
  tcpOpen,
  tryRun,
  waitFor,
} from './sys.js';
export {
  AGENT_MAIN,
  AGENT_NODE_FLAGS,
  CLIENT_DEADLINE_MS,
  ConnectProxy,
  READY_TIMEOUT_MS,
  Relay,
  spawnAgent,
  TEST_SECRET,
  waitConverged,
  waitForEvery,
} from './miso.js';
export type { AgentProc, AgentSpec } from './miso.js';
export type { Listener, ProcessRecord, RunOptions, RunResult, Service } from './sys.js';
export { CUT_TOXICS, latencyToxics, Toxiproxy, TOXIPROXY_API_TIMEOUT_MS } from './toxiproxy.js';
export type { ProxySpec, Toxic } from './toxiproxy.js';
