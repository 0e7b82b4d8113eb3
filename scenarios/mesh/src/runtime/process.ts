/**
 * The process runtime of the local mesh (MESH_RUNTIME=process, the default): every node is a set
 * of detached processes (services.ts: MongoDB, the function, the listener, the agent), in the
 * node's network namespace when isolated. The lifecycle around them is lifecycle.ts.
 */
import { join } from 'node:path';
import { inNetns, pool, startDetached, stopProcess, waitFor, type ProcessRecord } from '@syncmesh-edge/lab';
import type { MeshConfig } from '../config.js';
import { MeshError } from '../errors.js';
import { nodeOf, requireState, writeState, type MeshState } from '../plan/state.js';
import { buildTopology } from '../plan/topology.js';
import { assertAlive, baseEnv, processStatus, writeTopology } from './lifecycle.js';
import type { NodeStart, Progress, Runtime } from './runtime.js';
import { DATABASE_SERVICES, functionService, NODE_SERVICES, nodeServices, type NodeService, type ServiceContext } from './services.js';

function serviceContext(ctx: NodeStart): ServiceContext {
  return { cfg: ctx.cfg, plan: ctx.plan, node: ctx.node, secretFile: ctx.secretFile, forwardMode: ctx.cfg.forwardMode };
}

export const processRuntime: Runtime = {
  name: 'process',
  label: 'mesh',
  async preflight() {
    // the shared preflight checks every binary a process node runs
  },
  async startDatabase(ctx) {
    for (const svc of DATABASE_SERVICES) await startService(svc, serviceContext(ctx), ctx.state, ctx.signal);
  },
  async startServices(ctx) {
    for (const svc of nodeServices(ctx.cfg)) await startService(svc, serviceContext(ctx), ctx.state, ctx.signal);
  },
  servingAt: (node) => node.addr,
  // the teardown stops the recorded processes
  stopNodes: async () => 0,
  nodeProcesses: (state, node) => state.processes.filter((p) => p.node === node.id).map(processStatus),
  readyUrl: (node) => `http://${node.addr}:${node.functionPort}/readyz`,
};

async function startService(svc: NodeService, ctx: ServiceContext, state: MeshState, signal?: AbortSignal): Promise<void> {
  const { node, plan } = ctx;
  const logFile = join(plan.stateDir, 'logs', `${node.id}.${svc.role}.log`);
  const argv = svc.argv(ctx);
  const full = node.netns ? inNetns(node.netns, argv) : argv;
  const rec = startDetached(svc.role, node.id, full, logFile, { ...baseEnv(), ...svc.env(ctx) });
  state.processes.push(rec);
  writeState(state);
  await waitFor(
    `${svc.role} of ${node.id}`,
    () => svc.ready(ctx),
    ctx.cfg.readyTimeoutMs,
    () => {
      if (signal?.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted`);
      assertAlive(rec);
    },
  );
}

/**
 * Restarts every node's function with another forwarding mode (the benchmark compares them on
 * the same mesh and data). Other services keep running.
 */
export async function restartFunctions(cfg: MeshConfig, forwardMode: 'parallel' | 'sequential', progress: Progress = () => undefined): Promise<void> {
  const state = requireState(cfg.stateRoot, cfg.name);
  const secretFile = join(state.plan.stateDir, 'secret');
  progress(`restarting ${state.plan.nodes.length} functions with SYNCMESH_FORWARD_MODE=${forwardMode}`);
  const old = state.processes.filter((p) => p.node !== null && p.role === functionService.role);
  await Promise.all(old.map((p) => stopProcess(p)));
  state.processes = state.processes.filter((p) => !old.includes(p));
  state.forwardMode = forwardMode;
  writeState(state);
  await pool(state.plan.nodes, cfg.startConcurrency, async (node) => {
    const ctx: ServiceContext = { cfg, plan: state.plan, node, secretFile, forwardMode };
    await startService(functionService, ctx, state);
  });
  writeTopology(state.plan, buildTopology(state));
}

/** The recorded process of one role (mongo, function, listener, agent) of a node, the newest first. */
export function nodeProcess(stateRoot: string, name: string, ref: string, role: string): ProcessRecord | undefined {
  const state = requireState(stateRoot, name);
  const node = nodeOf(state, ref);
  return state.processes.filter((p) => p.node === node.id && p.role === role).pop();
}

/**
 * Starts one process of a node again, with the configuration of the mesh (after it died, was
 * killed or stopped: the chaos test), records it and waits until it is ready. A live process of
 * that role is stopped first. Records of the old process are dropped from the state.
 */
export async function startNodeService(cfg: MeshConfig, ref: string, role: string, signal?: AbortSignal): Promise<ProcessRecord> {
  const svc = [...DATABASE_SERVICES, ...NODE_SERVICES].find((s) => s.role === role);
  if (!svc) throw new MeshError('EDGE_MESH_CONFIG', `no node service '${role}' (${[...DATABASE_SERVICES, ...NODE_SERVICES].map((s) => s.role).join(', ')})`);
  const before = requireState(cfg.stateRoot, cfg.name);
  const node = nodeOf(before, ref);
  const old = before.processes.filter((p) => p.node === node.id && p.role === role);
  await Promise.all(old.map((p) => stopProcess(p)));
  // re-read after the await, and change the state in one synchronous step (startService writes it)
  const state = requireState(cfg.stateRoot, cfg.name);
  state.processes = state.processes.filter((p) => !(p.node === node.id && p.role === role));
  const ctx: ServiceContext = { cfg, plan: state.plan, node, secretFile: join(state.plan.stateDir, 'secret'), forwardMode: state.forwardMode };
  await startService(svc, ctx, state, signal);
  return nodeProcess(cfg.stateRoot, cfg.name, ref, role)!;
}
