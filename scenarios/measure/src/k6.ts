/**
 * Runs a k6 script (scenarios/k6) inside the client's namespace and reads the JSON summary its
 * handleSummary() writes. k6 always runs with --no-usage-report.
 */
import { inNetns } from '@syncmesh-edge/lab';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_K6_TIMEOUT_MS } from './config.js';
import { ScenarioError } from './errors.js';

/** k6's exit code when thresholds were crossed (the run itself completed). */
export const K6_THRESHOLDS_FAILED = 99;

export interface K6Run {
  script: string;
  env: Record<string, string>;
  summaryPath: string;
  /** Namespace to run in (the client's); null runs on the host. */
  netns: string | null;
  logPath: string;
  timeoutMs?: number;
}

export interface TrendValues {
  avg: number;
  min: number;
  med: number;
  max: number;
  'p(90)': number;
  'p(95)': number;
  'p(99)': number;
}

export interface K6Summary {
  metrics: Record<string, { type: string; values: Record<string, number>; thresholds?: Record<string, { ok: boolean }> }>;
}

export interface K6Outcome {
  exitCode: number;
  thresholdsOk: boolean;
  summary: K6Summary;
  durationMs: number;
}

export function trend(summary: K6Summary, name: string): TrendValues | null {
  const m = summary.metrics[name];
  return m ? (m.values as unknown as TrendValues) : null;
}

export function metricValue(summary: K6Summary, name: string, key: string): number | null {
  return summary.metrics[name]?.values[key] ?? null;
}

/** Starts k6; `onStart` gets its pid (for the CPU/memory sampler). */
export async function runK6(k6Bin: string, r: K6Run, onStart: (pid: number) => void = () => undefined): Promise<K6Outcome> {
  if (!existsSync(k6Bin)) throw new ScenarioError('EDGE_SCENARIO_TOOL_MISSING', `k6 is missing at ${k6Bin} (run: make k6)`);
  const args = [k6Bin, 'run', '--no-usage-report', '--quiet', '--no-color'];
  for (const [k, v] of Object.entries({ ...r.env, SUMMARY_PATH: r.summaryPath })) args.push('-e', `${k}=${v}`);
  args.push(r.script);
  const argv = r.netns ? inNetns(r.netns, args) : args;
  const t0 = performance.now();
  const { code, output } = await new Promise<{ code: number; output: string }>((resolveRun, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], cwd: join(r.script, '..') });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const timeoutMs = r.timeoutMs ?? DEFAULT_K6_TIMEOUT_MS;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    if (child.pid !== undefined) onStart(child.pid);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new ScenarioError('EDGE_SCENARIO_K6', `cannot run k6: ${err.message}`, { cause: err }));
    });
    child.once('close', (c, sig) => {
      clearTimeout(timer);
      resolveRun({ code: c ?? (sig === 'SIGKILL' ? 137 : 1), output });
    });
  });
  const durationMs = Math.round(performance.now() - t0);
  writeFileSync(r.logPath, output);
  if (code !== 0 && code !== K6_THRESHOLDS_FAILED) {
    throw new ScenarioError(
      'EDGE_SCENARIO_K6',
      `k6 ${r.script} exited with ${code}; output (${r.logPath}):\n${output.trim().split('\n').slice(-10).join('\n')}`,
    );
  }
  let summary: K6Summary;
  try {
    summary = JSON.parse(readFileSync(r.summaryPath, 'utf8')) as K6Summary;
  } catch (err) {
    throw new ScenarioError('EDGE_SCENARIO_K6', `k6 wrote no readable summary at ${r.summaryPath}: ${(err as Error).message}`, { cause: err });
  }
  return { exitCode: code, thresholdsOk: code === 0, summary, durationMs };
}
