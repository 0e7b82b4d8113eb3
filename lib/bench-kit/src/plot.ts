/**
 * The PNG beside a benchmark's JSON: `plot/bench_plots.py <kind>` (matplotlib, from the
 * repository's venv: `make scenarios-venv`) draws `<name>.png` next to `<name>.json`. Every
 * `make bench-*` plots this way, so the Makefile never needs to know which name a run chose.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './results.js';

/** The plotting script (kinds: the `plot_*` functions in it). */
export const PLOT_SCRIPT = join(REPO_ROOT, 'lib', 'bench-kit', 'plot', 'bench_plots.py');

/** Python with matplotlib: BENCH_PYTHON, else the repository's venv. */
export function plotPython(env: Record<string, string | undefined> = process.env): string {
  return env['BENCH_PYTHON'] ?? join(REPO_ROOT, '.cache', 'venv', 'bin', 'python');
}

/** Draws the PNG of results file `jsonPath` (…/<name>.json → …/<name>.png); returns its path. */
export function plotResults(kind: string, jsonPath: string, env: Record<string, string | undefined> = process.env): string {
  if (!jsonPath.endsWith('.json')) throw new RangeError(`a results file ends in .json, got ${JSON.stringify(jsonPath)}`);
  const python = plotPython(env);
  if (!existsSync(python)) {
    throw new Error(`no Python with matplotlib at ${python}: run \`make scenarios-venv\` (or set BENCH_PYTHON); ${jsonPath} is written`);
  }
  const png = `${jsonPath.slice(0, -'.json'.length)}.png`;
  execFileSync(python, [PLOT_SCRIPT, kind, jsonPath, png], { stdio: 'inherit' });
  return png;
}
