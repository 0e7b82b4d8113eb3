/** Where the tests and the bench find their binaries, and why a test cannot run here. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasCommand } from '@syncmesh-edge/lab';

export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
/** nats-server 2.15.3 of `make faasd-bins` (NATS_SERVER_BIN overrides). */
export const NATS_SERVER_BIN = process.env['NATS_SERVER_BIN'] ?? join(REPO_ROOT, '.cache', 'faasd', 'bin', arch, 'nats-server');
/** The patched gateway of `make faasd-bins` (GATEWAY_BIN overrides). */
export const GATEWAY_BIN = process.env['GATEWAY_BIN'] ?? join(REPO_ROOT, '.cache', 'faasd', 'bin', arch, 'gateway');
/** The Porcupine checker of `make coordination-tools` (LINCHECK_BIN overrides). */
export const LINCHECK_BIN = process.env['LINCHECK_BIN'] ?? join(REPO_ROOT, '.cache', 'bin', 'lincheck');
export const isRoot = process.getuid?.() === 0;

const BUILD_HINT = 'run make coordination-tools';

/** Why a test needing nats-server (and optionally more) cannot run here, or false. */
export function skipReason(needs: { netns?: boolean; lincheck?: boolean; gateway?: boolean } = {}): string | false {
  if (!existsSync(NATS_SERVER_BIN)) return `needs nats-server at ${NATS_SERVER_BIN}: ${BUILD_HINT}`;
  if (needs.gateway && !existsSync(GATEWAY_BIN)) return `needs the patched gateway at ${GATEWAY_BIN}: ${BUILD_HINT}`;
  if (needs.lincheck && !existsSync(LINCHECK_BIN)) return `needs lincheck at ${LINCHECK_BIN}: ${BUILD_HINT}`;
  if (needs.netns && !isRoot) return 'needs root for network namespaces (the CI runs as root)';
  if (needs.netns && !hasCommand('iptables')) return 'needs iptables: make tools';
  if (!hasCommand('openssl')) return 'needs openssl (route certificates)';
  return false;
}

/** Runs lincheck on a history file: its verdict and exit status. */
export function lincheck(history: string, viz: string): { status: number; verdict: Record<string, unknown> } {
  try {
    const out = execFileSync(LINCHECK_BIN, ['-viz', viz, '-timeout', '60s', history], { encoding: 'utf8' });
    return { status: 0, verdict: JSON.parse(out) };
  } catch (err) {
    const e = err as { status?: number; stdout?: string };
    return { status: e.status ?? -1, verdict: e.stdout ? JSON.parse(e.stdout) : {} };
  }
}
