/**
 * `make bench-function RUNTIME=faasd`: one faasd node (this package's faasd runtime, its data
 * loaded as for any mesh), then the function benchmark (functions/syncmesh/scripts/bench.js) run
 * inside the node's network namespace, so every path reaches the same database container the
 * same way (its CNI address, no port proxy) and the hops of the faasd path can be measured one
 * by one:
 *   direct    driver -> MongoDB container
 *   process   the function as a bare Node.js process in the node's namespace -> MongoDB
 *   watchdog  of-watchdog in the function's container (its CNI address :8080) -> function
 *   gateway   the gateway container (CNI address :8080/function/syncmesh-fn) -> provider -> watchdog
 *   proxy     127.0.0.1:8080: faasd up's userland port proxy -> gateway -> ... (how loopback reaches the gateway)
 *   faasd     the published port (node address :8080, the DNAT rule of patch 0006) -> gateway -> ...: what a
 *             client or a peer uses. Its `faasd_adds_p50_ms` is against `proxy`: what DNAT saves over the proxy.
 * Beside latency and throughput, the CPU time of every container and supervisor process of the
 * node is read around each measured run: CPU ms per request by service and path.
 * The node is removed afterwards (also on failure or Ctrl-C).
 */
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { REPO_ROOT, type MeshConfig } from '../src/config.js';
import { down, up, type Progress } from '../src/mesh.js';
import {
  faasdNodePids,
  faasdStateDir,
  FAASD_NODE_ROLE,
  FUNCTION_NAME,
  functionTaskAddress,
  renderFunctions,
  serviceAddress,
  stackVars,
} from '../src/runtime/faasd.js';
import { readState } from '../src/plan/state.js';
import { spawnInNetns } from '@syncmesh-edge/lab';
import { squashError } from '../src/errors.js';
import type { NodePlan } from '../src/plan/plan.js';
import { runMeshBench } from './run.js';

const BENCH = join(REPO_ROOT, 'functions', 'syncmesh', 'dist', 'bench', 'bench-function.js');
/** The function's settings (images/node/node.yml) that change how Node.js runs it, given to the bare process too. */
const SAME_ENV = ['NODE_OPTIONS', 'MALLOC_ARENA_MAX'];

export async function runFunctionBenchFaasd(base: MeshConfig, progress: Progress, argv: string[], signal: AbortSignal): Promise<number> {
  const cfg: MeshConfig = { ...base, nodes: 1, latency: 'none', runtime: 'faasd' };
  const mesh = await up(cfg, { progress, signal });
  try {
    const state = readState(mesh.plan.stateDir)!;
    const node = state.plan.nodes[0]!;
    const nodePid = state.processes.find((p) => p.role === FAASD_NODE_ROLE && p.node === node.id)!.pid;
    const stateDir = faasdStateDir(node);
    const mongo = serviceAddress(stateDir, 'mongodb');
    const gateway = serviceAddress(stateDir, 'gateway');
    const fn = await functionTaskAddress(nodePid);
    const http = [
      `watchdog=http://${fn}:8080/`,
      `gateway=http://${gateway}:8080/function/${FUNCTION_NAME}`,
      `proxy=http://127.0.0.1:8080/function/${FUNCTION_NAME}`,
      `faasd=http://${node.addr}:8080/function/${FUNCTION_NAME}`,
    ];
    progress(
      `benchmark in ${node.netns}: database ${mongo}, function task ${fn}, gateway ${gateway}, port proxy 127.0.0.1:8080, published (DNAT) ${node.addr}:8080`,
    );
    // the bare process runs with the deployed function's Node.js settings (the node description),
    // so the paths differ only in the hops in front of the function and its container
    const [deployed] = await renderFunctions(stackVars(cfg, state.plan.nodes[0]!, cfg.forwardMode));
    const fnEnv = SAME_ENV.filter((k) => deployed?.envVars[k] !== undefined).flatMap((k) => ['--fn-env', `${k}=${deployed!.envVars[k]}`]);
    progress(`the bare process gets the function's ${fnEnv.filter((_, i) => i % 2 === 1).join(' ') || 'defaults'}`);
    // where the CPU goes: every container of the node and the supervisor's processes by role
    const cpu = faasdNodeCpuGroups(node).map((g) => `${g.name}=${g.pids.join(',')}`);
    progress(`CPU measured per group: ${cpu.map((c) => c.split('=')[0]).join(', ')}`);
    const benchArgv = [
      process.execPath,
      BENCH,
      '--name',
      'function-faasd',
      '--label',
      'faasd node',
      ...http.flatMap((h) => ['--http', h]),
      ...fnEnv,
      ...cpu.flatMap((c) => ['--cpu', c]),
      ...argv,
    ];
    const code = await new Promise<number>((resolve) => {
      const child = spawnInNetns(node.netns!, benchArgv, {
        stdio: 'inherit',
        env: { ...process.env, MONGODB_URI: `mongodb://${mongo}:27017/?directConnection=true` },
      });
      const stop = () => child.kill('SIGTERM');
      signal.addEventListener('abort', stop, { once: true });
      child.once('exit', (c) => {
        signal.removeEventListener('abort', stop);
        resolve(c ?? 1);
      });
      child.once('error', () => resolve(127));
    });
    return code;
  } finally {
    await down(cfg.stateRoot, mesh.plan.name, progress);
  }
}

/** What a supervisor process is, from its command line (the supervisor cgroup holds them all). */
function supervisorRole(pid: number): string {
  let argv: string[] = [];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch (err) {
    squashError(err); // gone
  }
  const exe = basename(argv[0] ?? '');
  // the log shippers are faasd started by the shims with no arguments (containerd binary logging)
  if (exe === 'faasd') return { provider: 'provider', up: 'faasd-up', '': 'log-shipper' }[argv[1] ?? ''] ?? 'faasd';
  if (exe.startsWith('containerd-shim')) return 'shims';
  if (exe === 'containerd') return 'containerd';
  if (exe.includes('journald')) return 'journald';
  return 'node-run';
}

/**
 * The processes of one faasd node as named groups for a CPU meter (bench-kit's CpuGroup): one
 * per container (the task's processes), and the supervisor's split by role (provider, faasd-up,
 * log-shipper, shims, containerd, journald, node-run).
 */
export function faasdNodeCpuGroups(node: NodePlan): { name: string; pids: number[] }[] {
  const groups = new Map<string, number[]>();
  for (const svc of faasdNodePids(node)) {
    if (svc.service !== 'supervisor') {
      if (svc.pids.length > 0) groups.set(svc.service, svc.pids);
      continue;
    }
    for (const pid of svc.pids) {
      const role = supervisorRole(pid);
      groups.set(role, [...(groups.get(role) ?? []), pid]);
    }
  }
  return [...groups].map(([name, pids]) => ({ name, pids }));
}

runMeshBench(runFunctionBenchFaasd);
