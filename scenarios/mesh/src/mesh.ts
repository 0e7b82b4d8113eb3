/**
 * The mesh's operations: bring a mesh up and down, cut nodes off and restore them, report its
 * status. The lifecycle they share is runtime/lifecycle.ts; what runs on a node is the runtime's
 * (runtime/process.ts, runtime/faasd.ts), picked by MESH_RUNTIME for a start and by the state
 * file afterwards.
 */
import { join } from 'node:path';
import { httpOk } from '@syncmesh-edge/lab';
import type { MeshConfig } from './config.js';
import { cutNodeFirewall, restoreNodeFirewall } from './network/network.js';
import { ToxiproxyClient } from './network/toxiproxy.js';
import { linkProxies, type NodePlan } from './plan/plan.js';
import { nodeOf, readState, requireState, writeState, type MeshState } from './plan/state.js';
import { faasdRuntime } from './runtime/faasd.js';
import { processStatus, removeMesh, startMesh } from './runtime/lifecycle.js';
import { processRuntime } from './runtime/process.js';
import type { MeshHandle, Progress, ProcessStatus, Runtime, RuntimeName, UpOptions } from './runtime/runtime.js';

export type { MeshHandle, Progress, ProcessStatus, UpOptions } from './runtime/runtime.js';

const RUNTIMES: Record<RuntimeName, Runtime> = { process: processRuntime, faasd: faasdRuntime };

/** The runtime a mesh's state says it runs on (a state without one: process). */
function runtimeOf(state: MeshState | null): Runtime {
  return RUNTIMES[state?.runtime ?? 'process'];
}

/** Brings a mesh up on cfg.runtime. On any failure or abort, removes everything it created and rethrows. */
export function up(cfg: MeshConfig, opts: UpOptions = {}): Promise<MeshHandle> {
  return startMesh(RUNTIMES[cfg.runtime], cfg, opts);
}

/**
 * Removes a mesh: stops its nodes and processes, deletes its namespaces and interfaces (by name,
 * also the ones a crashed start left without state), its data and state. Logs stay. Idempotent.
 */
export function down(stateRoot: string, name: string, progress: Progress = () => undefined): Promise<{ stopped: number; netns: number; links: number }> {
  return removeMesh(runtimeOf(readState(join(stateRoot, name))), stateRoot, name, progress);
}

/**
 * Cuts a node off: its links in both directions, the functions' and the agents', hold data
 * forever (toxiproxy timeout toxics), and, when isolated, its interface drops every packet
 * (iptables in its namespace), so connections to it hang instead of being refused.
 */
export async function cut(stateRoot: string, name: string, ref: string): Promise<NodePlan> {
  const state = requireState(stateRoot, name);
  const node = nodeOf(state, ref);
  // recorded first: a restore of a neighbour running meanwhile then leaves the shared links cut
  if (!state.cut.includes(node.id)) state.cut.push(node.id);
  writeState(state);
  const toxi = new ToxiproxyClient(state.plan.toxiproxyApi.host, state.plan.toxiproxyApi.port);
  await toxi.cutLinks(linkProxies(state.plan).filter((l) => l.from === node.index || l.to === node.index));
  if (node.netns) await cutNodeFirewall(node);
  return node;
}

/**
 * Reconnects a cut node. A link to a node that is still cut stays cut (two neighbours cut at
 * once share their link; restoring one must not reconnect the other).
 */
export async function restore(stateRoot: string, name: string, ref: string): Promise<NodePlan> {
  const state = requireState(stateRoot, name);
  const node = nodeOf(state, ref);
  // unrecorded first (in the same synchronous step as the read), so that of two neighbours
  // restored at once, the later one reconnects their shared link
  state.cut = state.cut.filter((id) => id !== node.id);
  writeState(state);
  const stillCut = new Set(state.plan.nodes.filter((n) => state.cut.includes(n.id)).map((n) => n.index));
  if (node.netns) await restoreNodeFirewall(node);
  const toxi = new ToxiproxyClient(state.plan.toxiproxyApi.host, state.plan.toxiproxyApi.port);
  await toxi.restoreLinks(
    linkProxies(state.plan).filter((l) => (l.from === node.index && !stillCut.has(l.to)) || (l.to === node.index && !stillCut.has(l.from))),
  );
  return node;
}

export interface NodeStatusReport {
  id: string;
  addr: string;
  functionUrl: string;
  ready: boolean;
  cut: boolean;
  rssBytes: number;
  pssBytes: number;
  processes: ProcessStatus[];
}

export interface StatusReport {
  mesh: string;
  phase: string;
  isolation: string;
  latency: string;
  toxiproxy: ProcessStatus | null;
  nodes: NodeStatusReport[];
  totalRssBytes: number;
  totalPssBytes: number;
}

export async function status(stateRoot: string, name: string): Promise<StatusReport> {
  const state = requireState(stateRoot, name);
  const runtime = runtimeOf(state);
  const tp = state.processes.find((p) => p.role === 'toxiproxy');
  const nodes = await Promise.all(
    state.plan.nodes.map(async (n) => {
      const processes = runtime.nodeProcesses(state, n);
      return {
        id: n.id,
        addr: n.addr,
        functionUrl: n.functionUrl,
        ready: await httpOk(runtime.readyUrl(n), 1_000),
        cut: state.cut.includes(n.id),
        rssBytes: processes.reduce((s, p) => s + (p.rssBytes ?? 0), 0),
        pssBytes: processes.reduce((s, p) => s + (p.pssBytes ?? 0), 0),
        processes,
      };
    }),
  );
  const toxiproxy = tp ? processStatus(tp) : null;
  return {
    mesh: state.name,
    phase: state.phase,
    isolation: state.plan.isolation,
    latency: state.latency,
    toxiproxy,
    nodes,
    totalRssBytes: nodes.reduce((s, n) => s + n.rssBytes, 0) + (toxiproxy?.rssBytes ?? 0),
    totalPssBytes: nodes.reduce((s, n) => s + n.pssBytes, 0) + (toxiproxy?.pssBytes ?? 0),
  };
}
