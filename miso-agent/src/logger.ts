import { pino, type Logger } from 'pino';

/** The root logger (JSON lines on stderr); modules take a child ({ module }) and never bind user-controlled keys. */
export function createLogger(level: string, nodeId?: string): Logger {
  return pino(
    {
      level,
      base: nodeId ? { node: nodeId } : {},
      redact: { paths: ['meshSecret', 'config.meshSecret', '*.meshSecret', 'MISO_MESH_SECRET'], censor: '[redacted]' },
    },
    // Logs go to stderr: stdout carries only the READY line (and misoctl's output).
    pino.destination({ fd: 2, sync: false }),
  );
}
export type { Logger };
