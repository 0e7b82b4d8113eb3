/**
 * The results folder: every `make bench-*` writes `bench-results/<name>.json` (and its plot,
 * `<name>.png`) at the repository root, git-ignored. BENCH_RESULTS_DIR moves the folder.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: this file is lib/bench-kit/dist/src/results.js. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

export function resultsDir(env: Record<string, string | undefined> = process.env): string {
  return resolve(env['BENCH_RESULTS_DIR'] ?? join(REPO_ROOT, 'bench-results'));
}

/** Where benchmark `name` writes its file with extension `ext`. */
export function resultsPath(name: string, ext = 'json', env: Record<string, string | undefined> = process.env): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new RangeError(`benchmark name must be lowercase letters, digits and -, got ${JSON.stringify(name)}`);
  return join(resultsDir(env), `${name}.${ext}`);
}

/** Writes `data` as indented JSON to `path`, creating the folder; returns the path. */
export function writeResults(path: string, data: unknown): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
  return path;
}
