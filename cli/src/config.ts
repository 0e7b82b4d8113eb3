/**
 * The CLI's environment, read and validated once (zod). Command-line options override it:
 * `--mesh` over SYNCMESH_MESH, `--timeout-ms` over SYNCMESH_TIMEOUT_MS.
 *
 * | variable | default | meaning |
 * | SYNCMESH_MESH | .mesh/topology.json | the mesh description (relative: to the working directory) |
 * | SYNCMESH_TIMEOUT_MS | 5000 | how long one node may take to answer one request |
 * | SYNCMESH_CONCURRENCY | 32 | nodes asked at once (status, nodes --all, logs --all) |
 */
import { z } from 'zod';
import { CliError } from './errors.js';

export const DEFAULT_MESH_FILE = '.mesh/topology.json';

const envSchema = z.object({
  SYNCMESH_MESH: z.string().min(1).default(DEFAULT_MESH_FILE),
  SYNCMESH_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  SYNCMESH_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(32),
});

export interface CliConfig {
  meshFile: string;
  timeoutMs: number;
  concurrency: number;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): CliConfig {
  // an empty variable counts as unset
  const present = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('SYNCMESH_') && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const what = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new CliError('EDGE_CLI_CONFIG', `invalid environment: ${what}`, {
      hint: 'SYNCMESH_TIMEOUT_MS is 100-600000 ms, SYNCMESH_CONCURRENCY 1-256, SYNCMESH_MESH a file path',
    });
  }
  return { meshFile: parsed.data.SYNCMESH_MESH, timeoutMs: parsed.data.SYNCMESH_TIMEOUT_MS, concurrency: parsed.data.SYNCMESH_CONCURRENCY };
}
