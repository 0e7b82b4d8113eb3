/**
 * Runs one standalone node for the demo and the benchmark: a test server (or MONGODB_URI) plus
 * the function server as a child process, exactly as a local mesh node runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@syncmesh-edge/lab';
import { resolveMongo, type MongoTarget } from '@syncmesh-edge/mongo-test-server';

const here = dirname(fileURLToPath(import.meta.url));
export const PACKAGE_ROOT = resolve(here, '..', '..');
export const REPO_ROOT = resolve(PACKAGE_ROOT, '..', '..');
const MAIN = join(PACKAGE_ROOT, 'dist', 'src', 'main.js');
/** How long the function may take to become ready. */
const READY_TIMEOUT_MS = 30_000;

export interface LocalNode {
  id: string;
  url: string;
  mongo: MongoTarget;
  /** The function's process (replaced by `restartFunction`). */
  fn: ChildProcess;
  /** Kills the function (SIGKILL by default) and starts it again on the same port and database. */
  restartFunction(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/** Waits until GET url answers 200, polling every 100 ms, up to timeoutMs. */
export async function waitReady(url: string, timeoutMs = READY_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} not ready within ${timeoutMs} ms (${last})`);
}

/** `main`: the function's main.js to run (another build of it, e.g. to compare before and after a change). */
export async function startLocalNode(id: string, env: Record<string, string> = {}, heapMb = 160, main = MAIN): Promise<LocalNode> {
  if (!existsSync(main)) throw new Error(`${main} is missing: run make build first`);
  const mongo = await resolveMongo(process.env, { heapMb });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const spawnFunction = async () => {
    const child = spawn(process.execPath, [main], {
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', MONGODB_URI: mongo.uri, SYNCMESH_NODE_ID: id, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    try {
      await waitReady(`${base}/readyz`);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    return child;
  };
  const stopFunction = async (child: ChildProcess, signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  };
  let fn: ChildProcess;
  try {
    fn = await spawnFunction();
  } catch (err) {
    await mongo.stop();
    throw err;
  }
  return {
    id,
    url: `${base}/function/syncmesh-fn`,
    mongo,
    get fn() {
      return fn;
    },
    async restartFunction(signal: NodeJS.Signals = 'SIGKILL') {
      await stopFunction(fn, signal);
      fn = await spawnFunction();
    },
    async stop() {
      await stopFunction(fn, 'SIGTERM');
      await mongo.stop();
    },
  };
}

/** The Sofia CSV to use: --data (a file or a directory holding N.csv), else ../shared/data/sofia if present. */
export function sofiaFile(data: string | undefined, sensor: number): string | undefined {
  const candidates = data ? [data] : [join(REPO_ROOT, '..', 'shared', 'data', 'sofia')];
  for (const c of candidates) {
    const file = c.endsWith('.csv') ? c : join(c, `${sensor}.csv`);
    if (existsSync(file)) return file;
  }
  if (data) throw new Error(`no data at ${data} (expected a CSV file or a directory with ${sensor}.csv)`);
  return undefined;
}
