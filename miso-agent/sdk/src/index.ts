/**
 * @syncmesh-edge/miso-sdk: MISO Objects for Node functions. A function server built with
 * runFunction()/serveFunction() gives each handler `context.statefulObject`.
 */
export { MisoClient, agentTarget } from './client.js';
export type { AgentStatus, CrdtValue, OpsTransport } from './client.js';
export { loadSdkConfig, DEFAULT_CALL_DEADLINE_MS } from './config.js';
export type { SdkConfig } from './config.js';
export { MisoSdkError } from './errors.js';
export {
  StatefulObject,
  GCounter,
  PNCounter,
  EWFlag,
  GSet,
  ORSet,
  MVRegister,
  LWWRegister,
  ORMap,
} from './stateful-object.js';
export { serveFunction, runFunction, missingAgent, DEFAULT_MAX_BODY_BYTES, AGENT_WAIT_MS, MISO_LABEL } from './runtime.js';
export type { FunctionContext, FunctionEvent, FunctionServer, Handler, ServeOptions } from './runtime.js';
