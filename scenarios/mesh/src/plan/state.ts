/**
 * Mesh state on disk (.mesh/<name>/state.json): what was created and which processes were
 * started. It is written before and after every step, so that `mesh-down` can clean up after a
 * crash or Ctrl-C at any point.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Coordinates } from '../network/latency.js';
import { MeshError } from '../errors.js';
import { parseNodeRef, type MeshPlan, type NodePlan } from './plan.js';
import type { ProcessRecord } from '@syncmesh-edge/lab';

export interface MeshState {
  version: 1;
  name: string;
  /** process (bare processes) or faasd (a whole appliance per node); absent means process. */
  runtime?: 'process' | 'faasd';
  phase: 'starting' | 'up' | 'failed';
  createdAt: string;
  latency: string;
  dataDir: string | null;
  forwardMode: 'parallel' | 'sequential';
  plan: MeshPlan;
  processes: ProcessRecord[];
  /** Node ids that are cut off. */
  cut: string[];
  /** Node index -> location (from its own registry entry). */
  coords: Record<string, Coordinates>;
}

export function statePath(stateDir: string): string {
  return join(stateDir, 'state.json');
}

export function readState(stateDir: string): MeshState | null {
  const p = statePath(stateDir);
  if (!existsSync(p)) return null;
  return JSON.parse(readFileSync(p, 'utf8')) as MeshState;
}

/** Atomic write (rename), so a crash never leaves half a state file. */
export function writeState(state: MeshState): void {
  mkdirSync(state.plan.stateDir, { recursive: true });
  const p = statePath(state.plan.stateDir);
  writeFileSync(`${p}.tmp`, JSON.stringify(state, null, 2));
  renameSync(`${p}.tmp`, p);
}

/** The state of a mesh that is up (or being started); EDGE_MESH_NOT_UP when there is none. */
export function requireState(stateRoot: string, name: string): MeshState {
  const state = readState(join(stateRoot, name));
  if (!state) throw new MeshError('EDGE_MESH_NOT_UP', `mesh '${name}' is not up (no state in ${join(stateRoot, name)}); run make mesh-up first`);
  return state;
}

/** The node a reference (2, node-2) names; EDGE_MESH_UNKNOWN_NODE when the mesh has none such. */
export function nodeOf(state: MeshState, ref: string): NodePlan {
  const idx = parseNodeRef(ref);
  const node = idx === undefined ? undefined : state.plan.nodes[idx - 1];
  if (!node) throw new MeshError('EDGE_MESH_UNKNOWN_NODE', `'${ref}' is not a node of mesh '${state.name}' (node-1..node-${state.plan.nodes.length})`);
  return node;
}
