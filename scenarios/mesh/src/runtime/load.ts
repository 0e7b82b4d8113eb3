/**
 * Loads one node's data with the Syncmesh function's own loader (the same tool a real node's
 * provisioning uses): sensor i's month from DATA/i.csv, or generated data for sensor i. The
 * loader also writes the node's own registry entry (--set-own-location).
 */
import type { MeshConfig } from '../config.js';
import { MeshError } from '../errors.js';
import type { NodePlan } from '../plan/plan.js';
import { run } from '@syncmesh-edge/lab';

/** Loading one sensor-month takes a few seconds; allow for 30 nodes sharing 2 cores. */
const LOAD_TIMEOUT_MS = 180_000;

export async function loadNodeData(cfg: MeshConfig, node: NodePlan, csv: string | undefined): Promise<number> {
  const args = [cfg.loadCli, '--mongodb-uri', node.mongoUri];
  if (csv) args.push('--file', csv);
  else args.push('--generate', '--sensor', String(node.index));
  args.push('--set-own-location', '--node-id', node.id, '--address', node.functionUrl);
  let out: string;
  try {
    out = (await run(process.execPath, args, { timeoutMs: LOAD_TIMEOUT_MS })).stdout;
  } catch (err) {
    throw new MeshError('EDGE_MESH_DATA', `loading ${csv ?? `generated data for sensor ${node.index}`} into ${node.id} failed: ${(err as Error).message}`, {
      cause: err,
    });
  }
  // the loader prints one JSON line: {"loaded": N, ...}
  const last = out.trim().split('\n').pop() ?? '';
  let loaded: unknown;
  try {
    loaded = (JSON.parse(last) as { loaded?: unknown }).loaded;
  } catch (err) {
    throw new MeshError('EDGE_MESH_DATA', `the loader's output for ${node.id} is not its JSON summary: ${last.slice(0, 200)}`, { cause: err });
  }
  if (typeof loaded !== 'number') throw new MeshError('EDGE_MESH_DATA', `the loader printed no count for ${node.id}: ${last.slice(0, 200)}`);
  return loaded;
}
