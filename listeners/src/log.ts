import { pino, type Logger } from 'pino';

/**
 * The root logger. Each module takes a child (`logger.child({ module: 'delivery' })`). The mesh
 * secret never reaches a log call, and the redact list guards the config object if it is logged.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const opts = {
    level,
    base: { svc: 'listener' },
    redact: { paths: ['meshSecret', '*.meshSecret', 'config.meshSecret'], censor: '[redacted]' },
  };
  return destination ? pino(opts, destination as pino.DestinationStream) : pino(opts);
}

export type { Logger };
