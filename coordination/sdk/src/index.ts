/** @syncmesh-edge/coordination-sdk: CRUCIAL's linearizable shared objects on NATS JetStream. */
export { AtomicLong, AtomicMap, AtomicReference, Counter } from './atomic.js';
export { canonicalJson } from './codec.js';
export { loadConfig, connectNats, openFromEnv, DEFAULT_NATS_URL } from './config.js';
export type { SdkConfig } from './config.js';
export { Coordination, DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_MAX_VALUE_BYTES, DEFAULT_REPLICAS, DEFAULT_TIMEOUT_MS } from './coordination.js';
export type { CoordinationOptions } from './coordination.js';
export { COORDINATION_ERROR_CODES, CoordinationError } from './errors.js';
export type { CoordinationErrorCode } from './errors.js';
export { checkNamespace, checkObjectName, decodeMapKey, encodeMapKey, NAME_PATTERN } from './names.js';
export { counterStreamName, objectStreamName, isTransient, READ_MARKER_KEY, Store } from './store.js';
export type { StoreOptions, Versioned } from './store.js';
export { CountDownLatch, CyclicBarrier, Future, Semaphore } from './sync.js';
export type { BarrierArrival } from './sync.js';
