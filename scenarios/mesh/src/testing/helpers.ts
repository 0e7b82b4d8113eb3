/** Shared by the mesh integration tests: unique names, and a snapshot of what a mesh leaves behind. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../config.js';
import { hasCommand, isAlive, listRoutes } from '@syncmesh-edge/lab';
import { overlaps } from '../plan/plan.js';
import { readState } from '../plan/state.js';

export const isRoot = process.getuid?.() === 0;

/** A mesh name no other test process uses at the same time. */
export function uniqueMeshName(prefix: string): string {
  // MESH_TEST_PREFIX (3 characters) marks one engineer's test meshes on a shared host: it
  // replaces all but the last letter of the prefix (names have at most 8 characters)
  const own = process.env['MESH_TEST_PREFIX']?.slice(0, 3);
  return own ? `${own}${prefix.slice(-1)}${process.pid % 10000}` : `${prefix}${process.pid % 100000}`;
}

/**
 * A free 10.SECOND.y.0/24 for a test mesh: the first y from the pid on whose /24 no host route
 * overlaps (a killed earlier run can leave its bridge and route behind).
 */
export async function freeTestSubnet(second: number): Promise<string> {
  // no ip command (the test then skips anyway): the pid's /24
  const all = await listRoutes().catch(() => []);
  const routes = all.filter((r) => r.dst !== 'default' && r.table !== 'local' && (r.type === undefined || r.type === 'unicast'));
  for (let i = 0; i < 256; i++) {
    const subnet = `10.${second}.${(process.pid + i) % 256}.0/24`;
    if (!routes.some((r) => overlaps(subnet, r.dst))) return subnet;
  }
  throw new Error(`no free 10.${second}.y.0/24 on this host: remove leftover test bridges (ip route | grep '^10.${second}.')`);
}

export function tempStateRoot(): string {
  return mkdtempSync(join(tmpdir(), 'mesh-test-'));
}

/** Is `cmd` on the PATH? (the lab's one check) */
export const has = hasCommand;

export function iptablesRules(): string {
  return has('iptables-save') ? execFileSync('iptables-save', { encoding: 'utf8' }).replace(/^#.*$/gm, '').trim() : '';
}

/** The processes the mesh's state file recorded (read before `down` removes it). */
export function recordedProcesses(stateDir: string): { pid: number; startTime: number; role: string }[] {
  return readState(stateDir)?.processes ?? [];
}

export function stillRunning(procs: { pid: number; startTime: number }[]): number[] {
  return procs.filter(isAlive).map((p) => p.pid);
}

/** Where `make tools` installs toxiproxy. */
export const TOXIPROXY_BIN = join(REPO_ROOT, '.cache', 'bin', 'toxiproxy-server');

/**
 * Why a namespace test cannot run here, or false when it can: it needs root, toxiproxy and
 * iptables, and optionally the built Syncmesh function.
 */
export function netnsSkipReason(opts: { functionMain?: string } = {}): string | false {
  if (!isRoot) return 'needs root for network namespaces (the CI runs as root)';
  if (!existsSync(TOXIPROXY_BIN) || !has('iptables')) return 'needs toxiproxy and iptables: run make tools';
  if (opts.functionMain && !existsSync(opts.functionMain)) return `needs the Syncmesh function: ${opts.functionMain} is missing (make build)`;
  return false;
}

/** The built MISO agent and SDK (make build), which the agent tests need. */
export const AGENT_MAIN = join(REPO_ROOT, 'miso-agent', 'dist', 'src', 'main.js');
export const SDK_MAIN = join(REPO_ROOT, 'miso-agent', 'sdk', 'dist', 'src', 'index.js');

/** Why an agent test cannot run here (netnsSkipReason, the built agent and SDK), or false. */
export function agentSkipReason(): string | false {
  return (
    netnsSkipReason() ||
    (!existsSync(AGENT_MAIN) && `needs the MISO agent: ${AGENT_MAIN} is missing (make build)`) ||
    (!existsSync(SDK_MAIN) && `needs the MISO SDK: ${SDK_MAIN} is missing (make build)`)
  );
}

/** The part of @syncmesh-edge/miso-sdk's MisoClient the mesh tests use (loaded from the built SDK). */
export interface MisoTestClient {
  register(fn: string, replica: string): Promise<unknown>;
  apply(fn: string, object: string, name: string, type: string, op: unknown, returnValue?: boolean): Promise<unknown>;
  read(fn: string, object: string, name: string, type?: string): Promise<{ value: unknown }>;
  status(): Promise<{
    node_id: string;
    peers: { node_id: string; address: string; connected: boolean; lag_last_ms: number }[];
    functions: { function: string; nodes: string[] }[];
  }>;
  close(): void;
}

/** SDK clients of a mesh's agents (and of any agent a test adds), by node id. */
export class AgentClients extends Map<string, MisoTestClient> {
  /** One client per node, on its agent's SDK socket (the node's directory). */
  async openMesh(nodes: readonly { id: string; dir: string }[], deadlineMs = 5_000): Promise<void> {
    for (const n of nodes) this.set(n.id, await misoClient(join(n.dir, 'miso.sock'), deadlineMs));
  }

  /** The client of `node`; fails the test when there is none. */
  of(node: string): MisoTestClient {
    const c = this.get(node);
    assert.ok(c, `no SDK client for ${node}`);
    return c;
  }

  /** The ids of the peers `node`'s agent lists as connected, sorted. */
  async connectedPeers(node: string): Promise<string[]> {
    return (await this.of(node).status()).peers
      .filter((p) => p.connected)
      .map((p) => p.node_id)
      .sort();
  }

  closeAll(): void {
    for (const c of this.values()) c.close();
  }
}

/** A MISO SDK client on an agent's socket, from the built SDK. */
export async function misoClient(socket: string, deadlineMs: number): Promise<MisoTestClient> {
  const sdk = (await import(pathToFileURL(SDK_MAIN).href)) as { MisoClient: new (socket: string, deadlineMs: number) => MisoTestClient };
  return new sdk.MisoClient(socket, deadlineMs);
}

/** Poll interval of `until`. */
const POLL_MS = 50;

/**
 * Polls `check` until it returns true; fails with `what` and the last observation (a string it
 * returned, or the error it threw) after the deadline. Returns the milliseconds it took.
 */
export async function until(what: string, deadlineMs: number, check: () => Promise<boolean | string>): Promise<number> {
  const t0 = performance.now();
  let last: boolean | string = false;
  while (performance.now() - t0 < deadlineMs) {
    try {
      last = await check();
    } catch (err) {
      last = `error: ${(err as Error).message}`;
    }
    if (last === true) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  assert.fail(`${what}: not within ${deadlineMs} ms (last: ${String(last)})`);
}
