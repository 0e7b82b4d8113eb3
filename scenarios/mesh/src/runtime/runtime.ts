/**
 * The seam between the mesh's lifecycle (lifecycle.ts: plan, preflight, bridge, links, registries,
 * topology, teardown) and what runs on a node. Two runtimes implement it: process.ts (bare
 * processes: MongoDB, function, listener, agent) and faasd.ts (a whole appliance per node:
 * containerd + faasd, the function deployed through its gateway). Neither imports the other, nor
 * mesh.ts; mesh.ts picks one by MESH_RUNTIME (start) or by the state file (status, teardown).
 */
import type { MeshConfig } from '../config.js';
import type { MeshPlan, NodePlan } from '../plan/plan.js';
import type { MeshState } from '../plan/state.js';
import type { Topology } from '../plan/topology.js';

export type RuntimeName = 'process' | 'faasd';

export type Progress = (message: string) => void;

export interface UpOptions {
  /** Load data into each node (default true). Plumbing tests turn it off. */
  loadData?: boolean;
  /** Fill every node's registry with its peers (default true). */
  fillRegistry?: boolean;
  progress?: Progress;
  /** Aborts the start (Ctrl-C); everything created so far is removed. */
  signal?: AbortSignal;
}

export interface MeshHandle {
  readonly plan: MeshPlan;
  readonly topology: Topology;
  readonly secret: string;
}

/** One node being started: its namespace (netns isolation) and folder exist. */
export interface NodeStart {
  readonly cfg: MeshConfig;
  readonly plan: MeshPlan;
  readonly node: NodePlan;
  /** The mesh's state; a runtime records every process it starts here before it waits for it. */
  readonly state: MeshState;
  /** File holding the mesh secret (the clients' write key is beside it, services.ts writeKeyFileFor). */
  readonly secretFile: string;
  readonly signal?: AbortSignal;
}

/** One process or service of a node as `mesh status` shows it. */
export interface ProcessStatus {
  role: string;
  pid: number;
  alive: boolean;
  rssBytes: number | null;
  pssBytes: number | null;
}

export interface Runtime {
  readonly name: RuntimeName;
  /** The mesh's name in the start's progress and log ("mesh", "faasd mesh"). */
  readonly label: string;
  /** The runtime's own checks of a start; like the shared preflight, it changes nothing. */
  preflight(cfg: MeshConfig, plan: MeshPlan): Promise<void>;
  /**
   * Starts a node up to a ready MongoDB (process: the database service; faasd: the whole
   * appliance with its gateway). The node's data is loaded after this, before startServices.
   */
  startDatabase(ctx: NodeStart): Promise<void>;
  /** Starts what serves queries once the data is in (process: function, listener, agent; faasd: the deployed function). */
  startServices(ctx: NodeStart): Promise<void>;
  /** Where a started node answers, for the start's progress line. */
  servingAt(node: NodePlan): string;
  /** What the start's progress line says about startDatabase's time (faasd: "faasd up"); none: only the total. */
  readonly databasePhase?: string;
  /** Stops what the recorded processes do not cover (faasd: node-down.sh per node) before the teardown stops them; returns how many it stopped. */
  stopNodes(state: MeshState, progress: Progress): Promise<number>;
  /** The processes (or services) of one node as status rows. */
  nodeProcesses(state: MeshState, node: NodePlan): ProcessStatus[];
  /** The URL whose answer says the node serves queries. */
  readyUrl(node: NodePlan): string;
}
