/** Small process helpers: run a command with a deadline, start a logged service, poll with a deadline. */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { ScenarioError, squashError } from './errors.js';

export interface RunResult {
  stdout: string;
  stderr: string;
}

const DEFAULT_RUN_TIMEOUT_MS = 60_000;

/** Runs a command to completion; throws EDGE_SCENARIO_COMMAND_FAILED with its stderr on a non-zero exit or timeout. */
export function run(cmd: string, args: readonly string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timeoutMs = opts.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new ScenarioError('EDGE_SCENARIO_TOOL_MISSING', `cannot run ${cmd}: ${err.message}`, { cause: err }));
    });
    child.once('close', (code, sig) => {
      clearTimeout(timer);
      if (code === 0) resolveRun({ stdout, stderr });
      else
        reject(
          new ScenarioError(
            'EDGE_SCENARIO_COMMAND_FAILED',
            `${cmd} ${args.join(' ').slice(0, 300)} ${sig ? `was killed (${sig}${sig === 'SIGKILL' ? `, over ${timeoutMs} ms?` : ''})` : `exited with ${code}`}: ${stderr.trim().slice(-800)}`,
          ),
        );
    });
  });
}

/** Like run(), but reports failure as false (for removing things that may already be gone). */
export async function tryRun(cmd: string, args: readonly string[]): Promise<boolean> {
  try {
    await run(cmd, args);
    return true;
  } catch (err) {
    squashError(err); // the caller only wants to know whether it worked
    return false;
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until true, with a deadline; `fail` may throw early (e.g. the process died). */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, fail?: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let wait = 50;
  while (Date.now() < deadline) {
    if (await check()) return;
    fail?.();
    await delay(wait);
    wait = Math.min(wait * 2, 500);
  }
  throw new ScenarioError('EDGE_SCENARIO_CENTRAL_START', `${what} not ready within ${timeoutMs} ms`);
}

/** A service we started; `ip netns exec` execs in place, so `pid` is the service's own. */
export interface Service {
  readonly role: string;
  readonly pid: number;
  readonly log: string;
  readonly child: ChildProcess;
  exited(): boolean;
  /** SIGTERM, SIGKILL after `graceMs`; resolves when gone. Safe to call twice. */
  stop(graceMs?: number): Promise<void>;
}

export function startService(role: string, argv: readonly string[], log: string, env: NodeJS.ProcessEnv): Service {
  const fd = openSync(log, 'a');
  let child: ChildProcess;
  try {
    child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', fd, fd], env });
  } finally {
    closeSync(fd);
  }
  child.on('error', squashError); // surfaced by the readiness check, which sees the process gone
  if (child.pid === undefined) throw new ScenarioError('EDGE_SCENARIO_CENTRAL_START', `cannot start ${argv[0]} for ${role}; see ${log}`);
  let gone = false;
  const closed = new Promise<void>((r) =>
    child.once('exit', () => {
      gone = true;
      r();
    }),
  );
  let stopping: Promise<void> | undefined;
  return {
    role,
    pid: child.pid,
    log,
    child,
    exited: () => gone,
    stop(graceMs = 5_000) {
      stopping ??= (async () => {
        if (gone) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await closed;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

/** Readiness probes and the bounded pool are the mesh's; one copy for both components. */
export { tcpOpen, httpOk, pool, tail } from '@syncmesh-edge/mesh';
