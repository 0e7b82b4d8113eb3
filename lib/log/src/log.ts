import { pino, type Logger } from 'pino';

/**
 * Every path that may carry a secret in a log call of any service: the mesh secret (a config
 * object, the agent's environment), MongoDB connection strings (they may hold credentials),
 * request signatures and authorization headers. pino replaces them before anything is written.
 * A path matches at the top level of a log object or, with `*.`, one level down.
 */
export const REDACT_PATHS: readonly string[] = [
  'secret',
  '*.secret',
  'meshSecret',
  '*.meshSecret',
  'MISO_MESH_SECRET',
  '*.MISO_MESH_SECRET',
  'SYNCMESH_MESH_SECRET',
  '*.SYNCMESH_MESH_SECRET',
  'MONGODB_URI',
  '*.MONGODB_URI',
  'mongodbUri',
  '*.mongodbUri',
  'mongoUri',
  '*.mongoUri',
  'headers["x-syncmesh-signature"]',
  'headers.authorization',
  'req.headers["x-syncmesh-signature"]',
  'req.headers.authorization',
];

/** What a redacted value becomes. */
export const REDACTED = '[redacted]';

export interface LoggerOptions {
  /** pino level name: fatal, error, warn, info, debug, trace or silent. */
  level: string;
  /** Bound as `svc` on every line when set (e.g. 'listener', 'syncmesh-fn'). */
  svc?: string;
  /** Bound as `node` on every line when set: the node id. */
  node?: string;
  /**
   * Where the JSON lines go: 'stdout' (the default), 'stderr' (asynchronous, for a process
   * whose stdout carries something else), or a writable stream (tests).
   */
  destination?: 'stdout' | 'stderr' | NodeJS.WritableStream;
}

/**
 * The root logger of a service: JSON lines with only `svc` and `node` bound (no pid, no
 * hostname), secrets redacted. Each module takes a child (`log.child({ module: 'delivery' })`)
 * and never binds user-controlled keys.
 */
export function createLogger({ level, svc, node, destination = 'stdout' }: LoggerOptions): Logger {
  const opts = {
    level,
    base: { ...(svc ? { svc } : {}), ...(node ? { node } : {}) },
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
  };
  if (destination === 'stdout') return pino(opts);
  if (destination === 'stderr') return pino(opts, pino.destination({ fd: 2, sync: false }));
  return pino(opts, destination as pino.DestinationStream);
}

export type { Logger };
