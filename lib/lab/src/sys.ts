/**
 * Small wrappers around the operating system: running commands with a deadline, finding
 * listeners, identifying and stopping the processes we started (detached, or as children with a
 * logged service), polling for readiness, and a bounded pool.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { squashError } from '@syncmesh-edge/log';
import { LabError } from './errors.js';

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** How long a command may run unless the caller says otherwise. */
export const DEFAULT_RUN_TIMEOUT_MS = 60_000;

export interface RunOptions {
  timeoutMs?: number;
  /** Written to the command's stdin. */
  input?: string;
  env?: NodeJS.ProcessEnv;
}

/** Runs a command; rejects with EDGE_LAB_COMMAND_FAILED naming the command and its stderr (its stdout when stderr is empty) (EDGE_LAB_TOOL_MISSING when it is not installed). */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const options = { timeout: opts.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024, ...(opts.env ? { env: opts.env } : {}) };
    const child = execFile(cmd, args as string[], options, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') {
          reject(new LabError('EDGE_LAB_TOOL_MISSING', `'${cmd}' is not installed (run: make tools)`, { cause: err }));
          return;
        }
        const e = err as NodeJS.ErrnoException & { code?: number | string; signal?: string };
        const how = e.signal ? `was killed by ${e.signal}` : `exited with ${e.code}`;
        const shown = [cmd, ...args].join(' ');
        // some tools (faas-cli) say why on stdout
        const why = (String(stderr).trim() || String(stdout).trim()).split('\n').slice(-3).join(' | ');
        reject(
          new LabError('EDGE_LAB_COMMAND_FAILED', `${shown.length > 160 ? `${shown.slice(0, 160)}…` : shown} ${how}${why ? `: ${why}` : ''}`, { cause: err }),
        );
        return;
      }
      resolveRun({ stdout: String(stdout), stderr: String(stderr) });
    });
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

/** Like run(), but a failure is returned instead of thrown (teardown of things that may be gone). */
export async function tryRun(cmd: string, args: readonly string[]): Promise<boolean> {
  try {
    await run(cmd, args);
    return true;
  } catch (err) {
    squashError(err); // the object is already gone, or the tool is not installed: nothing to remove
    return false;
  }
}

/** A TCP listener from /proc/net/tcp{,6}. */
export interface Listener {
  readonly addr: string;
  readonly port: number;
}

/** Parses /proc/net/tcp (IPv4) listeners: "0100007F:1F90 ... 0A" -> 127.0.0.1:8080. */
export function parseProcNetTcp(text: string): Listener[] {
  const out: Listener[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || f[3] !== '0A') continue;
    const [hexAddr, hexPort] = (f[1] ?? '').split(':');
    if (!hexAddr || !hexPort) continue;
    if (hexAddr.length === 8) {
      const b = hexAddr
        .match(/../g)!
        .map((x) => parseInt(x, 16))
        .reverse();
      out.push({ addr: b.join('.'), port: parseInt(hexPort, 16) });
    } else {
      // IPv6: only the unspecified address matters to us (it also takes the IPv4 port)
      out.push({ addr: /^0+$/.test(hexAddr) ? '::' : 'ipv6', port: parseInt(hexPort, 16) });
    }
  }
  return out;
}

/** The host namespace's TCP listeners. */
export function hostListeners(): Listener[] {
  const out: Listener[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      out.push(...parseProcNetTcp(readFileSync(file, 'utf8')));
    } catch (err) {
      squashError(err); // no IPv6 on this kernel
    }
  }
  return out;
}

/** Would binding host:port clash with an existing listener? */
export function portTaken(listeners: readonly Listener[], host: string, port: number): boolean {
  return listeners.some((l) => l.port === port && (l.addr === host || l.addr === '0.0.0.0' || l.addr === '::' || host === '0.0.0.0'));
}

/** Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), or null if it is gone. */
export function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[19]);
  } catch (err) {
    squashError(err); // the process is gone
    return null;
  }
}

/** A process we started, identified by pid and start time so that a reused pid is never killed. */
export interface ProcessRecord {
  readonly role: string;
  readonly node: string | null;
  readonly pid: number;
  readonly startTime: number;
  readonly log: string;
}

export function isAlive(p: Pick<ProcessRecord, 'pid' | 'startTime'>): boolean {
  const st = processStartTime(p.pid);
  return st !== null && st === p.startTime;
}

/** Resident set size in bytes (VmRSS), or null when the process is gone. */
export function rssBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch (err) {
    squashError(err); // the process is gone
    return null;
  }
}

/**
 * Proportional set size in bytes (Pss in smaps_rollup): private memory plus this process's share
 * of pages it shares with others (the node and java binaries). Summing PSS over processes gives
 * the memory they really take; summing RSS counts shared code once per process.
 */
export function pssBytes(pid: number): number | null {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch (err) {
    squashError(err); // the process is gone
    return null;
  }
}

/**
 * Starts a detached process (own session, so Ctrl-C on the terminal does not reach it) with
 * output appended to `log`, and returns its record. `ip netns exec` execs in place, so the pid
 * is the service's own.
 */
export function startDetached(role: string, node: string | null, argv: readonly string[], log: string, env: NodeJS.ProcessEnv): ProcessRecord {
  const fd = openSync(log, 'a');
  try {
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', fd, fd], env });
    child.on('error', squashError); // surfaced by the readiness check, which sees the process gone
    child.unref();
    if (child.pid === undefined) throw new LabError('EDGE_LAB_PROCESS_START', `cannot start ${argv[0]} for ${role}${node ? ` of ${node}` : ''}`);
    const startTime = processStartTime(child.pid);
    if (startTime === null) throw new LabError('EDGE_LAB_PROCESS_START', `${role}${node ? ` of ${node}` : ''} exited at once; see ${log}`);
    return { role, node, pid: child.pid, startTime, log };
  } finally {
    closeSync(fd);
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. Safe if it already is. */
export async function stopProcess(p: Pick<ProcessRecord, 'pid' | 'startTime'>, graceMs = 5_000): Promise<void> {
  if (!isAlive(p)) return;
  signal(p.pid, 'SIGTERM');
  const termDeadline = Date.now() + graceMs;
  while (isAlive(p) && Date.now() < termDeadline) await delay(50);
  if (isAlive(p)) {
    signal(p.pid, 'SIGKILL');
    const killDeadline = Date.now() + 5_000;
    while (isAlive(p) && Date.now() < killDeadline) await delay(50);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    squashError(err); // exited between the check and the signal
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it returns true, with a deadline; `fail` may throw early (e.g. the process died). */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, fail?: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let wait = 25;
  for (;;) {
    if (await check()) return;
    fail?.();
    if (Date.now() > deadline) throw new LabError('EDGE_LAB_NOT_READY', `${what} not ready within ${timeoutMs} ms`);
    await delay(wait);
    wait = Math.min(wait * 2, 250);
  }
}

/** Is `cmd` on the PATH? (Tests skip with a reason when a tool is missing.) */
export function hasCommand(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch (err) {
    squashError(err); // not installed
    return false;
  }
}

/**
 * Polls `cond` every `everyMs` until true; EDGE_LAB_NOT_READY ("timed out after … waiting for
 * <what>") after `timeoutMs`. For tests that watch a value change (the interval is the
 * resolution of what they measure); `waitFor` backs off instead, for readiness.
 */
export async function waitForEvery(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 15_000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new LabError('EDGE_LAB_NOT_READY', `timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(everyMs);
  }
}

/** A TCP port free on 127.0.0.1 now (bound to port 0 and released; another process may take it). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Does host:port accept a TCP connection within `timeoutMs`? */
export function tcpOpen(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolveOpen) => {
    const sock = connect({ host, port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolveOpen(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/** Does GET url answer 200 within `timeoutMs`? */
export async function httpOk(url: string, timeoutMs = 1_000): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.status === 200;
  } catch (err) {
    squashError(err); // not up yet
    return false;
  }
}

/** Runs `fn` over `items` with at most `limit` at a time; the first failure rejects (the rest still settle). */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, i);
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure;
  return results;
}

/** The last lines of a log file, for error messages. */
export function tail(path: string, lines = 5): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch (err) {
    squashError(err); // no log yet
    return '';
  }
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
  if (child.pid === undefined) throw new LabError('EDGE_LAB_PROCESS_START', `cannot start ${argv[0]} for ${role}; see ${log}`);
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

/** The JSON lines (a service's pino log) in `text`; other lines (a READY line, a stack) are skipped. */
export function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
