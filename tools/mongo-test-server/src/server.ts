import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const here = dirname(fileURLToPath(import.meta.url));
/** Package root, both from src/ (tsx) and dist/src/ (compiled). */
const packageRoot = existsSync(join(here, '..', 'java')) ? resolve(here, '..') : resolve(here, '..', '..');
const javaDir = join(packageRoot, 'java');

/** The launcher jar built by `mvn package` in java/ (its dependencies sit in target/lib). */
export const TEST_SERVER_JAR = join(javaDir, 'target', 'mongo-test-server.jar');

/** Heap for one test server. The data set of one sensor-month (~18k docs) needs well under this. */
const DEFAULT_HEAP_MB = 96;
/** How long to wait for the READY line before giving up. */
const DEFAULT_START_TIMEOUT_MS = 30_000;
/** How long a stop may take before the JVM is killed. */
const STOP_TIMEOUT_MS = 10_000;

export interface TestServerOptions {
  /** Address to listen on. Default 127.0.0.1. */
  bind?: string;
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Keep data on disk here (H2 MVStore). Default: in memory. */
  dataDir?: string;
  /** Maximum Java heap in MB. Default 96. */
  heapMb?: number;
  /** Give up if the server is not ready within this time. Default 30 s. */
  startTimeoutMs?: number;
  /** Oplog entries kept for change streams (launcher default 10,000). */
  oplogMaxEntries?: number;
  /** Oplog entries older than this are dropped (launcher default 120 s). */
  oplogMaxAgeSeconds?: number;
  /** With `dataDir`: commit before answering each write, so kill -9 loses nothing acknowledged (`--durable-writes`). */
  durableWrites?: boolean;
}

export interface TestServer {
  /** Connection string, e.g. mongodb://127.0.0.1:41234/ */
  readonly uri: string;
  readonly port: number;
  readonly pid: number;
  /** Stops the server (SIGTERM, then SIGKILL after 10 s). Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * JVM flags sized for an edge node: a small heap, the serial collector (no GC threads to
 * compete with 30 neighbours on 2 cores) and capped metaspace/code cache so that RSS stays
 * near heap + ~60 MB.
 */
function jvmFlags(heapMb: number): string[] {
  return [
    `-Xmx${heapMb}m`,
    '-Xms16m',
    '-XX:+UseSerialGC',
    '-Xss512k',
    '-XX:MaxMetaspaceSize=64m',
    '-XX:ReservedCodeCacheSize=32m',
    '-XX:+ExitOnOutOfMemoryError',
    '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
  ];
}

/** Builds the jar with Maven when it is missing (first run on a fresh clone). */
export function ensureTestServerJar(): string {
  if (!existsSync(TEST_SERVER_JAR)) {
    const r = spawnSync('mvn', ['-q', '-B', 'package', '-DskipTests'], { cwd: javaDir, stdio: 'inherit' });
    if (r.status !== 0 || !existsSync(TEST_SERVER_JAR)) {
      throw new Error(`building the test server failed (mvn package in ${javaDir} exited ${r.status})`);
    }
  }
  return TEST_SERVER_JAR;
}

/** The command line that starts a test server; the mesh runs it inside a network namespace. */
export function testServerCommand(opts: TestServerOptions & { exitOnStdinEof?: boolean } = {}): string[] {
  const args = ['java', ...jvmFlags(opts.heapMb ?? DEFAULT_HEAP_MB), '-jar', ensureTestServerJar()];
  args.push('--bind', opts.bind ?? '127.0.0.1', '--port', String(opts.port ?? 0));
  if (opts.dataDir) args.push('--data-dir', opts.dataDir);
  if (opts.durableWrites) args.push('--durable-writes');
  if (opts.oplogMaxEntries !== undefined) args.push('--oplog-max-entries', String(opts.oplogMaxEntries));
  if (opts.oplogMaxAgeSeconds !== undefined) args.push('--oplog-max-age-seconds', String(opts.oplogMaxAgeSeconds));
  if (opts.exitOnStdinEof) args.push('--exit-on-stdin-eof');
  return args;
}

/**
 * Starts a test server as a child process and resolves once it accepts connections.
 * The child exits by itself if this process dies (it watches its stdin).
 */
export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const [cmd, ...args] = testServerCommand({ ...opts, exitOnStdinEof: true });
  const child = spawn(cmd!, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr.push(chunk);
    if (stderr.length > 50) stderr.shift();
  });
  const timeoutMs = opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;

  const uri = await new Promise<string>((resolveReady, reject) => {
    const lines = createInterface({ input: child.stdout });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`test server not ready within ${timeoutMs} ms: ${stderr.join('').trim()}`));
    }, timeoutMs);
    lines.on('line', (line) => {
      if (line.startsWith('READY ')) {
        clearTimeout(timer);
        resolveReady(line.slice('READY '.length).trim());
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`test server exited with ${code} before it was ready: ${stderr.join('').trim()}`));
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start java for the test server: ${err.message}`, { cause: err }));
    });
  });

  let stopping: Promise<void> | undefined;
  const port = Number(new URL(uri).port);
  return {
    uri,
    port,
    pid: child.pid!,
    stop() {
      stopping ??= new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        const killer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        child.once('exit', () => {
          clearTimeout(killer);
          done();
        });
        child.kill('SIGTERM');
      });
      return stopping;
    },
  };
}
