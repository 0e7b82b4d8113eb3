/**
 * Integration helpers: the listener as a real child process (so it can be killed with -9), its
 * JSON log lines, and a test server or real MongoDB (MONGODB_URI) to run against.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { waitForEvery } from '@syncmesh-edge/lab';

const here = dirname(fileURLToPath(import.meta.url));
/** dist/src/main.js, from dist/src/testing/. */
export const MAIN_JS = join(here, '..', 'main.js');

/** At least 32 bytes, as every mesh secret must be. */
export const SECRET = 'listener-integration-mesh-secret-32-bytes';

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export interface ListenerProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[];
  /** Resolves with the exit code (or signal name) once the process ended. */
  readonly exited: Promise<number | string>;
  waitForLog(pred: (l: LogLine) => boolean, timeoutMs: number, what: string): Promise<LogLine>;
  count(pred: (l: LogLine) => boolean): number;
  kill(signal: NodeJS.Signals): Promise<number | string>;
}

/** Adds directConnection for the test server (it has no replica set to discover). */
export function listenerUri(uri: string, kind: 'real' | 'test-server'): string {
  if (kind === 'real') return uri;
  return uri.includes('?') ? `${uri}&directConnection=true` : `${uri}?directConnection=true`;
}

export function startListener(env: Record<string, string>): ListenerProcess {
  const child = spawn(process.execPath, [MAIN_JS], {
    env: { PATH: process.env['PATH'] ?? '', SYNCMESH_MESH_SECRET: SECRET, LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (c: string) => stderr.push(c));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      lines.push({ level: 0, msg: line });
    }
  });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  let ended = false;
  void exited.then(() => (ended = true));

  return {
    child,
    lines,
    exited,
    async waitForLog(pred, timeoutMs, what) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const hit = lines.find(pred);
        if (hit) return hit;
        if (ended || Date.now() > until) {
          throw new Error(
            `${ended ? 'listener exited' : `timed out after ${timeoutMs} ms`} waiting for ${what}; last log lines:\n` +
              lines
                .slice(-15)
                .map((l) => JSON.stringify(l))
                .join('\n') +
              `\nstderr: ${stderr.join('')}`,
          );
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    count(pred) {
      return lines.filter(pred).length;
    },
    async kill(signal) {
      if (!ended) child.kill(signal);
      return exited;
    },
  };
}

export const isStreaming = (l: LogLine) => l.msg === 'stream state: streaming';

/** Polls `cond` every 20 ms until true; throws after `timeoutMs` (the lab's one fixed-interval poll). */
export function waitUntil(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  return waitForEvery(what, cond, timeoutMs, 20);
}
