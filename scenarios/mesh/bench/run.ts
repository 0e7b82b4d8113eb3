/**
 * The one entry of the mesh's benchmarks (fanout.ts, replication.ts, function-faasd.ts): the mesh
 * configuration from the environment (MESH_*, as for make mesh-up), the arguments (BENCH_ARGS),
 * and Ctrl-C: a running start removes what it created, a running measurement ends at its next
 * request, and the benchmark tears its mesh down before it exits.
 */
import { loadConfig, type MeshConfig } from '../src/config.js';
import { interruptible, progress, runMain } from '../src/command.js';
import { MeshError } from '../src/errors.js';
import type { Progress } from '../src/runtime/runtime.js';

export type MeshBench = (cfg: MeshConfig, progress: Progress, argv: string[], signal: AbortSignal) => Promise<number>;

/** Runs `bench` as the program's main. */
export function runMeshBench(bench: MeshBench): void {
  runMain((argv) => {
    const cfg = loadConfig();
    return interruptible('interrupted: stopping the benchmark and tearing its mesh down', (signal) => bench(cfg, progress, argv, signal));
  });
}

export function throwIfInterrupted(signal: AbortSignal): void {
  if (signal.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', 'benchmark interrupted');
}
