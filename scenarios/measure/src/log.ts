/** pino logger of the scenario harness (stderr; LOG_LEVEL, default warn). One child per module. */
import { createLogger, type Logger } from '@syncmesh-edge/log';

const root = createLogger({ svc: 'scenarios', level: process.env['LOG_LEVEL'] ?? 'warn', destination: process.stderr });

export function moduleLogger(module: string): Logger {
  return root.child({ module });
}
