/**
 * @syncmesh-edge/listener: the MongoDB change-stream listener. Run it with `node dist/src/main.js`
 * (see README.md); the exports below are for the local mesh and benchmarks. Test support
 * (src/testing/) is not exported: tests import it by path.
 */
export { loadConfig } from './config.js';
export type { ListenerConfig } from './config.js';
export { createListener, driverStreams, FatalListenerError, MAX_AWAIT_TIME_MS } from './listener.js';
export type { Listener, CollectionStats, StreamLike, OpenStream, OpenStreamOptions, StreamState, DeliveryState } from './listener.js';
export { normaliseChange } from './events.js';
export type { ChangeEnvelope, ChangeOp, Normalised, ResumeToken, ResyncReason } from './events.js';
export { createFunctionClient, encodeEvents } from './delivery.js';
export { replayDeadLetters } from './replay.js';
export type { ReplayOptions, ReplaySummary, ReplayedLetter } from './replay.js';
export type { FunctionClient, ResyncRequest, DeliveryResult } from './delivery.js';
export { createTokenStore, STATE_COLLECTION, DEAD_LETTER_COLLECTION } from './tokens.js';
export type { TokenStore, StoredPosition, DeadLetter } from './tokens.js';
export { classifyError } from './classify.js';
export type { Verdict } from './classify.js';
export { ListenerError, DeliveryError, ERROR_CODES } from './errors.js';
export type { ListenerErrorCode } from './errors.js';
export { createHealthServer } from './health.js';
export { ListenerMetrics } from './metrics.js';
