/**
 * The newest pymongo, for tests that check the test server (and a node) with the Python driver
 * the sensors and gateways use. It lives in a venv under the repository's `.cache/`, installed
 * from the package index by pip on first use and upgraded when the last install is older than a
 * day, so later runs start at once.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** Package root, both from src/ (tsx) and dist/src/ (compiled). */
export const packageRoot = existsSync(join(here, '..', 'java')) ? resolve(here, '..') : resolve(here, '..', '..');

/** The venv: `<repository>/.cache/pymongo-venv`. */
export const PYMONGO_VENV = resolve(packageRoot, '..', '..', '.cache', 'pymongo-venv');
/** An install younger than this is used as it is; an older one is upgraded to the newest pymongo. */
const UPGRADE_AFTER_MS = 24 * 3600_000;
/** How long a concurrent test may take to build the venv before this one gives up waiting. */
const BUILD_WAIT_MS = 5 * 60_000;

export interface Pymongo {
  /** The venv's python. */
  python: string;
  /** pymongo's version, e.g. "4.20.1". */
  version: string;
}

const stampOf = (venv: string) => join(venv, '.pymongo-version');

function installed(venv: string): Pymongo | undefined {
  const stamp = stampOf(venv);
  if (!existsSync(stamp)) return undefined;
  return { python: join(venv, 'bin', 'python'), version: readFileSync(stamp, 'utf8').trim() };
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr || r.stdout).trim().slice(-2000)}`);
  }
}

/** Builds a fresh venv with the newest pymongo next to the old one, then swaps it in. */
function build(venv: string): Pymongo {
  const fresh = `${venv}.new-${process.pid}`;
  rmSync(fresh, { recursive: true, force: true });
  run('python3', ['-m', 'venv', fresh]);
  const python = join(fresh, 'bin', 'python');
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--upgrade', 'pymongo']);
  const version = spawnSync(python, ['-c', 'import pymongo; print(pymongo.version)'], { encoding: 'utf8' }).stdout.trim();
  writeFileSync(stampOf(fresh), `${version}\n`);
  const old = `${venv}.old-${process.pid}`;
  if (existsSync(venv)) renameSync(venv, old);
  renameSync(fresh, venv); // a venv's python finds its packages relative to itself: a renamed venv works
  rmSync(old, { recursive: true, force: true });
  return { python: join(venv, 'bin', 'python'), version };
}

/**
 * The venv's python with the newest pymongo, installing or upgrading it when needed. Tests of
 * several files may ask at once: one builds (a lock directory), the others wait for it. Without
 * access to the package index an existing install is used as it is.
 */
export async function ensurePymongo(venv = PYMONGO_VENV): Promise<Pymongo> {
  const have = installed(venv);
  if (have && Date.now() - statSync(stampOf(venv)).mtimeMs < UPGRADE_AFTER_MS) return have;
  mkdirSync(dirname(venv), { recursive: true });
  const lock = `${venv}.lock`;
  const deadline = Date.now() + BUILD_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (Date.now() - statSync(lock).mtimeMs > BUILD_WAIT_MS) rmSync(lock, { recursive: true, force: true }); // left by a killed run
      if (Date.now() > deadline) throw new Error(`another test has been building ${venv} for more than ${BUILD_WAIT_MS / 1000} s (lock ${lock})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    const now = installed(venv);
    if (now && Date.now() - statSync(stampOf(venv)).mtimeMs < UPGRADE_AFTER_MS) return now; // built while this one waited
    try {
      return build(venv);
    } catch (err) {
      if (now) return now; // no package index: keep the one there is
      throw new Error(`cannot install pymongo into ${venv}: ${(err as Error).message}`, { cause: err });
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Runs a Python script with the pymongo venv; resolves with its stdout, rejects with its stderr. */
export async function runPython(py: Pymongo, args: string[], timeoutMs = 120_000): Promise<string> {
  const child = spawn(py.python, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const out: string[] = [];
  const err: string[] = [];
  child.stdout.setEncoding('utf8').on('data', (d: string) => out.push(d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => err.push(d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail);
    child.once('close', (c) => done(c));
  }).finally(() => clearTimeout(timer));
  if (code !== 0) throw new Error(`python ${args[0]} exited ${code}: ${err.join('').trim().slice(-3000)}`);
  return out.join('');
}
