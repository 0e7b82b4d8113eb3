import { pino, type Logger } from 'pino';

/** Paths that may carry secrets; pino replaces them before anything is written. */
const REDACT = ['secret', 'meshSecret', '*.meshSecret', 'headers["x-syncmesh-signature"]', 'req.headers["x-syncmesh-signature"]', 'req.headers.authorization'];

export function createLogger(level: string, nodeId: string): Logger {
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base: { svc: 'syncmesh-fn', node: nodeId } });
}

export type { Logger };
