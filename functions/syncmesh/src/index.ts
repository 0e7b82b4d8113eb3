/** Public surface of the Syncmesh function package (used by the mesh, listener and benchmarks). */
export { buildApp, routeOf } from './app.js';
export type { App, AppDeps } from './app.js';
export { loadConfig } from './config.js';
export type { Config } from './config.js';
export { SyncmeshError, ERROR_CODES } from './errors.js';
export type { ErrorCode } from './errors.js';
export { haversineKm } from './mesh/geo.js';
export { NodeRegistry } from './mesh/registry.js';
export type { MeshNode, NodeInput, NodePatch } from './mesh/registry.js';
export { finishAggregate, mergeAggregate, mergeDocs, emptyAggregate, METRICS } from './data/partials.js';
export type { AggregatePartial, AggregateResult, SensorDoc, MetricStats } from './data/partials.js';
export { checkReplication, formatCheck, CHECK_ORIGIN } from './replication/check.js';
export type { CheckOptions, CheckTarget, MeshCheck, OriginCheck } from './replication/check.js';
export type { CheckReport, SubscriberCheck } from './replication/antientropy.js';
