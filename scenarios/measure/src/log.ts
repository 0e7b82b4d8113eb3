/** pino logger of the scenario harness (stderr; LOG_LEVEL, default warn). One child per module. */
import { pino, type Logger } from 'pino';

const root = pino(
  {
    name: 'scenarios',
    level: process.env['LOG_LEVEL'] ?? 'warn',
    redact: { paths: ['secret', '*.secret', 'env.SYNCMESH_MESH_SECRET'], censor: '[redacted]' },
  },
  pino.destination(2),
);

export function moduleLogger(module: string): Logger {
  return root.child({ module });
}
