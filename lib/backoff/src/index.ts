/** @syncmesh-edge/backoff: the one retry backoff (equal jitter) and an abortable sleep. */
export { backoffDelayMs, sleep } from './backoff.js';
export type { BackoffOptions, BackoffPolicy } from './backoff.js';
