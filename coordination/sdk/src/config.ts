/** The SDK's configuration from a function's environment (validated once) and the connection it describes. */
import { readFileSync } from 'node:fs';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { nkeyAuthenticator } from '@nats-io/nats-core';
import { z } from 'zod';
import { Coordination, DEFAULT_REPLICAS, DEFAULT_TIMEOUT_MS } from './coordination.js';
import { COORDINATION_ERROR_CODES, CoordinationError } from './errors.js';
import { NAME_PATTERN } from './names.js';

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

const schema = z.object({
  COORDINATION_NATS_URL: z
    .string()
    .trim()
    .regex(/^(nats|tls):\/\/[^\s,]+(,(nats|tls):\/\/[^\s,]+)*$/, 'one or more nats:// or tls:// URLs, comma-separated')
    .default(DEFAULT_NATS_URL),
  COORDINATION_NKEY_SEED_FILE: z.string().trim().min(1).optional(),
  COORDINATION_NAMESPACE: z.string().regex(NAME_PATTERN, '1 to 64 letters, digits, _ or -').default('default'),
  COORDINATION_REPLICAS: z.enum(['1', '3', '5']).default(String(DEFAULT_REPLICAS) as '3'),
  COORDINATION_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(DEFAULT_TIMEOUT_MS),
  COORDINATION_DOMAIN: z.string().regex(NAME_PATTERN, '1 to 64 letters, digits, _ or -').optional(),
});

export interface SdkConfig {
  readonly servers: string[];
  readonly nkeySeedFile: string | undefined;
  readonly namespace: string;
  readonly replicas: number;
  readonly timeoutMs: number;
  readonly domain: string | undefined;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): SdkConfig {
  const r = schema.safeParse(env);
  if (!r.success) {
    const problems = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new CoordinationError(COORDINATION_ERROR_CODES.CONFIG, `invalid coordination SDK configuration: ${problems}`);
  }
  const c = r.data;
  return Object.freeze({
    servers: c.COORDINATION_NATS_URL.split(','),
    nkeySeedFile: c.COORDINATION_NKEY_SEED_FILE,
    namespace: c.COORDINATION_NAMESPACE,
    replicas: Number(c.COORDINATION_REPLICAS),
    timeoutMs: c.COORDINATION_TIMEOUT_MS,
    domain: c.COORDINATION_DOMAIN,
  });
}

/** Connects to NATS as the configuration says (nkey from the seed file when given). */
export async function connectNats(cfg: SdkConfig, name = 'coordination-sdk'): Promise<NatsConnection> {
  let authenticator: ReturnType<typeof nkeyAuthenticator> | undefined;
  if (cfg.nkeySeedFile) {
    let seed: Uint8Array;
    try {
      seed = new TextEncoder().encode(readFileSync(cfg.nkeySeedFile, 'utf8').trim());
    } catch (err) {
      throw new CoordinationError(COORDINATION_ERROR_CODES.CONFIG, `COORDINATION_NKEY_SEED_FILE ${cfg.nkeySeedFile} cannot be read`, { cause: err });
    }
    authenticator = nkeyAuthenticator(seed);
  }
  return connect({ servers: cfg.servers, name, maxReconnectAttempts: -1, ...(authenticator ? { authenticator } : {}) });
}

/** The namespace of the configuration, on a new connection (close it with `nc.close()`). */
export async function openFromEnv(env: Record<string, string | undefined> = process.env): Promise<{ nc: NatsConnection; coordination: Coordination }> {
  const cfg = loadConfig(env);
  const nc = await connectNats(cfg);
  try {
    const coordination = await Coordination.open(nc, {
      namespace: cfg.namespace,
      replicas: cfg.replicas,
      timeoutMs: cfg.timeoutMs,
      ...(cfg.domain ? { domain: cfg.domain } : {}),
    });
    return { nc, coordination };
  } catch (err) {
    await nc.close();
    throw err;
  }
}
