/**
 * The MISO agent's launcher for tests and benchmarks, the package's `testing` export
 * (`@syncmesh-edge/miso-agent/testing`, never part of the shipped bundle: the image bundles
 * src/main.ts only): spawns real agent processes (dist/src/main.js) on ephemeral loopback ports,
 * waits for their READY line and gives each an SDK client; waits for CRDTs to converge. The
 * agent's own tests, miso-counter's and `make bench-miso` use it. It lives here, not in lib/lab,
 * because lib/ depends on nothing in the products.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { LabError, waitForEvery } from '@syncmesh-edge/lab';
import { MisoClient } from '@syncmesh-edge/miso-sdk';

/** The built agent of this package (dist/src/main.js beside this module's dist/testing/). */
export const AGENT_MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');
/** V8 flags for agent processes (see README, "Running"): small young generation. */
export const AGENT_NODE_FLAGS = ['--max-semi-space-size=1'];
/** Start-up deadline of one agent (generous: the build machine is shared). */
export const READY_TIMEOUT_MS = 60_000;
/** Deadline of the harness's SDK calls; MISO_TEST_DEADLINE_MS raises it (benchmarks on a busy host). */
export const CLIENT_DEADLINE_MS = Number(process.env['MISO_TEST_DEADLINE_MS'] ?? 5_000);
export const TEST_SECRET = 'test-mesh-secret-0123456789abcdef';

export interface AgentSpec {
  nodeId: string;
  mongoUri?: string | undefined;
  /** Database name (agents sharing one test server use one database each). */
  db?: string;
  peers?: string[];
  /** host:port to bind the peer server (default 127.0.0.1:0). */
  grpcAddr?: string;
  env?: Record<string, string>;
  /** Extra Node.js flags for the agent process (e.g. `--cpu-prof`, which NODE_OPTIONS refuses). */
  nodeFlags?: string[];
}

export interface AgentProc {
  readonly spec: AgentSpec;
  readonly nodeId: string;
  /** The address peers use (the advertised one). */
  readonly peerAddress: string;
  /** The address the agent bound. */
  readonly boundAddress: string;
  readonly sdk: string;
  /** Metrics port (0 when disabled). */
  readonly metricsPort: number;
  readonly client: MisoClient;
  readonly proc: ChildProcess;
  readonly stderr: string[];
  /** SIGTERM and wait (or SIGKILL with hard = true). */
  stop(hard?: boolean): Promise<void>;
}

/** MISO_TEST_LOG_DIR: also keep every agent's log in <dir>/<node id>.log (debugging). */
const logDir = process.env['MISO_TEST_LOG_DIR'];
let sockDir: string | undefined;
/** The agents' SDK socket folder, made on first use (importing the lab makes nothing). */
function socketDir(): string {
  if (sockDir === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'miso-test-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    sockDir = dir;
  }
  return sockDir;
}

export async function spawnAgent(spec: AgentSpec): Promise<AgentProc> {
  const sock = join(socketDir(), `${spec.nodeId}-${Math.random().toString(36).slice(2, 8)}.sock`);
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '',
    MISO_NODE_ID: spec.nodeId,
    MISO_GRPC_ADDR: spec.grpcAddr ?? '127.0.0.1:0',
    MISO_SDK_SOCKET: sock,
    MISO_MESH_SECRET: TEST_SECRET,
    MISO_PEERS: (spec.peers ?? []).join(','),
    MISO_MONGO_DB: spec.db ?? `miso_${spec.nodeId.replace(/[^A-Za-z0-9_]/g, '_')}`,
    LOG_LEVEL: process.env['MISO_TEST_LOG_LEVEL'] ?? 'warn',
    MISO_EXIT_ON_STDIN_EOF: '1',
    // glibc: fewer malloc arenas for a mostly single-threaded process (see README, "Running").
    MALLOC_ARENA_MAX: '2',
    ...(spec.mongoUri ? { MONGODB_URI: spec.mongoUri } : {}),
    ...spec.env,
  };
  const proc = spawn(process.execPath, [...AGENT_NODE_FLAGS, ...(spec.nodeFlags ?? []), AGENT_MAIN], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => {
    stderr.push(c);
    if (stderr.length > 200) stderr.shift();
    if (process.env['MISO_TEST_LOG_LEVEL']) process.stderr.write(`[${spec.nodeId}] ${c}`);
    if (logDir) appendFileSync(join(logDir, `${spec.nodeId}.log`), c);
  });
  const line = await new Promise<string>((ok, fail) => {
    const t = setTimeout(
      () => fail(new LabError('EDGE_LAB_NOT_READY', `agent ${spec.nodeId} not ready in ${READY_TIMEOUT_MS} ms: ${stderr.join('')}`)),
      READY_TIMEOUT_MS,
    );
    createInterface({ input: proc.stdout! }).on('line', (l) => {
      if (l.startsWith('READY ')) {
        clearTimeout(t);
        ok(l);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(t);
      fail(new LabError('EDGE_LAB_PROCESS_START', `agent ${spec.nodeId} exited with ${code}: ${stderr.join('')}`));
    });
  });
  const field = (k: string) => new RegExp(`${k}=(\\S+)`).exec(line)![1]!;
  const client = new MisoClient(field('sdk'), CLIENT_DEADLINE_MS);
  let stopped: Promise<void> | undefined;
  return {
    spec,
    nodeId: spec.nodeId,
    peerAddress: field('peer'),
    boundAddress: field('bound'),
    sdk: field('sdk'),
    metricsPort: Number(field('metrics')),
    client,
    proc,
    stderr,
    stop(hard = false) {
      stopped ??= (async () => {
        client.close();
        if (proc.exitCode !== null || proc.signalCode !== null) return;
        const exited = once(proc, 'exit');
        proc.kill(hard ? 'SIGKILL' : 'SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(t);
      })();
      return stopped;
    },
  };
}

/** Reads the same CRDT on every agent; resolves when all values are deep-equal (JSON). */
export async function waitConverged(
  agents: AgentProc[],
  fn: string,
  object: string,
  name: string,
  type: string,
  expected?: unknown,
  timeoutMs = 15_000,
): Promise<unknown> {
  let last: unknown[] = [];
  try {
    await waitForEvery(
      `${name} to converge on ${agents.length} agents`,
      async () => {
        last = await Promise.all(agents.map(async (a) => (await a.client.read(fn, object, name, type)).value));
        const s = last.map((v) => JSON.stringify(v));
        return s.every((x) => x === s[0]) && (expected === undefined || s[0] === JSON.stringify(expected));
      },
      timeoutMs,
      50,
    );
  } catch (err) {
    throw new LabError('EDGE_LAB_NOT_READY', `${(err as Error).message}; last values: ${JSON.stringify(last)}`, { cause: err });
  }
  return last[0];
}
