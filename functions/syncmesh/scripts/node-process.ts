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
  fn: ChildProcess;
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
  const fn = spawn(process.execPath, [main], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', MONGODB_URI: mongo.uri, SYNCMESH_NODE_ID: id, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitReady(`${base}/readyz`);
  } catch (err) {
    fn.kill('SIGKILL');
    await mongo.stop();
    throw err;
  }
  return {
    id,
    url: `${base}/function/syncmesh-fn`,
    mongo,
    fn,
    async stop() {
      if (fn.exitCode === null) {
        const exited = new Promise((r) => fn.once('exit', r));
        fn.kill('SIGTERM');
        await exited;
      }
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
