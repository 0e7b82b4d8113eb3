/** Shared by the mesh integration tests: unique names, and a snapshot of what a mesh leaves behind. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../config.js';
import { hasCommand, isAlive } from '@syncmesh-edge/lab';
import { readState } from '../state.js';

export const isRoot = process.getuid?.() === 0;

/** A mesh name no other test process uses at the same time. */
export function uniqueMeshName(prefix: string): string {
  // MESH_TEST_PREFIX (3 characters) marks one engineer's test meshes on a shared host: it
  // replaces all but the last letter of the prefix (names have at most 8 characters)
  const own = process.env['MESH_TEST_PREFIX']?.slice(0, 3);
  return own ? `${own}${prefix.slice(-1)}${process.pid % 10000}` : `${prefix}${process.pid % 100000}`;
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
