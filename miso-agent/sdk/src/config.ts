/** SDK configuration from the function's environment (validated once). */
import { hostname } from 'node:os';
import { z } from 'zod';
import { MisoSdkError } from './errors.js';

/** Deadline of every call to the agent. */
export const DEFAULT_CALL_DEADLINE_MS = 2_000;

const schema = z.object({
  MISO_SDK_SOCKET: z.string().min(1).default('/run/miso/agent.sock'),
  MISO_FUNCTION: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'letters, digits, . _ - (1-128)'),
  MISO_REPLICA_ID: z.string().min(1).max(256).optional(),
  MISO_CALL_DEADLINE_MS: z.coerce.number().int().min(1).max(600_000).default(DEFAULT_CALL_DEADLINE_MS),
  MISO_DEFAULT_OBJECT: z.string().min(1).max(256).default('default'),
});

export interface SdkConfig {
  /** Agent endpoint: a unix socket path (or unix:path) or a loopback host:port. */
  readonly socket: string;
  /** Function name: replicas of the same function on other nodes share its objects. */
  readonly fn: string;
  /** This replica (container); default hostname:pid. */
  readonly replica: string;
  readonly deadlineMs: number;
  /** Object used when a request names none. */
  readonly defaultObject: string;
}

export function loadSdkConfig(env: Record<string, string | undefined> = process.env): SdkConfig {
  const r = schema.safeParse(env);
  if (!r.success) {
    const problems = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new MisoSdkError('EDGE_MISO_SDK_CONFIG', `invalid MISO SDK configuration: ${problems}`);
  }
  const c = r.data;
  return Object.freeze({
    socket: c.MISO_SDK_SOCKET,
    fn: c.MISO_FUNCTION,
    replica: c.MISO_REPLICA_ID ?? `${hostname()}:${process.pid}`,
    deadlineMs: c.MISO_CALL_DEADLINE_MS,
    defaultObject: c.MISO_DEFAULT_OBJECT,
  });
}
