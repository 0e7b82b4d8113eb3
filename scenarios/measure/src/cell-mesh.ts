/** The mesh a measurement cell runs on (run.ts runs cells; existing.ts checks a mesh someone else started). */
import type { CaptureTarget, ExtraNamespace, Layout } from '@syncmesh-edge/lab';
import type { Central } from './central.js';
import type { WatchedProcess } from './sampler.js';

/** What a cell needs of the mesh it runs on: one the harness started, or an existing one. */
export interface CellMesh {
  /** node-1 (the entry) first, with the URLs it reaches every other node at. */
  readonly nodes: readonly { id: string; function_url: string; peers: Readonly<Record<string, string>> }[];
  /** Where k6 runs. */
  readonly client: ExtraNamespace;
  /** The link profile recorded with every cell. */
  readonly latency: string;
  captureTargets(central: Central | null): CaptureTarget[];
  layout(central: Central | null): Layout;
  /** The processes to sample: those of nodes 1..`nodes` that run on this machine, and the central server's. */
  processes(central: Central | null, nodes: number): Promise<WatchedProcess[]>;
}
