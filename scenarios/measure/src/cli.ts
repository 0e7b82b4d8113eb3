#!/usr/bin/env node
/**
 * scenarios <command>: the Makefile's scenario targets call this (root needed: namespaces).
 *
 *   cell     one cell per system in SCENARIO_SYSTEM (make scenario NODES=3 WORKLOAD=aggregate ...);
 *            with SCENARIO_TOPOLOGY, one syncmesh cell on that existing mesh (make scenario
 *            TOPOLOGY=... or TARGET=terraform SCENARIO=local-3)
 *   matrix   the paper's matrix: SCENARIO_MATRIX_* x both systems (make scenarios)
 *   report   rewrite results.csv, plots and report.md of an existing run from its results.json
 *
 * Results land in SCENARIO_RESULTS_DIR/<run>/ (results.json, results.csv, traffic.png, rtt.png,
 * report.md, and per node count the pcaps, k6 summaries and logs).
 */
import { removeExtraNamespaces } from '@syncmesh-edge/lab';
import { hostInfo } from '@syncmesh-edge/bench-kit';
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { down as meshDown } from '@syncmesh-edge/mesh';
import { loadConfig, type ScenarioConfig } from './config.js';
import { ScenarioError } from './errors.js';
import { writeResults, type RunMeta } from './report.js';
import { inspectExistingMesh, detachClient, type ExistingMesh } from './existing.js';
import { cellId, runOnExistingMesh, runOnOneMesh, type CellResult, type CellSpec } from './run.js';

function progress(message: string): void {
  process.stderr.write(`[scenarios ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function runId(cfg: ScenarioConfig, kind: string): string {
  return cfg.run ?? `${new Date().toISOString().replace(/[:]/g, '').replace(/\..*$/, '')}-${kind}`;
}

export function matrixCells(cfg: ScenarioConfig): CellSpec[] {
  const cells: CellSpec[] = [];
  for (const nodes of cfg.matrix.nodes)
    for (const workload of cfg.matrix.workloads)
      for (const days of cfg.matrix.days)
        for (const requests of cfg.matrix.requests) for (const system of cfg.systems) cells.push({ system, nodes, workload, days, requests });
  return cells;
}

function requireRoot(): void {
  if (process.getuid?.() !== 0) throw new ScenarioError('EDGE_SCENARIO_NOT_ROOT', 'the scenarios create network namespaces: run as root');
}

/** `existing`: run the cells on that mesh (checked already) instead of starting one. */
async function runCells(cfg: ScenarioConfig, cells: CellSpec[], kind: string, existing: ExistingMesh | null = null): Promise<string> {
  requireRoot();
  const run = runId(cfg, kind);
  const runDir = join(cfg.resultsDir, run);
  mkdirSync(runDir, { recursive: true });
  const started = new Date();
  const t0 = performance.now();
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) return;
    interrupted = true;
    void (async () => {
      if (existing) {
        // not ours: the existing mesh stays as it is
        progress(`interrupted: removing the client namespace ${existing.client.netns}`);
        await detachClient(existing);
      } else {
        progress('interrupted: removing the mesh and the scenario namespaces');
        await removeExtraNamespaces(cfg.meshName);
        await meshDown(cfg.stateDir, cfg.meshName);
      }
      process.exit(130);
    })();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const latency = existing ? existing.latency : cfg.latency;
  progress(`run ${run}: ${cells.length} cells (${[...new Set(cells.map((c) => c.nodes))].join(', ')} nodes), profile ${latency}; results in ${runDir}`);
  let done = 0;
  const onCell = (r: CellResult) => {
    done++;
    const elapsed = (performance.now() - t0) / 1000;
    progress(`[${done}/${cells.length}] ${cellId(r)} done; elapsed ${elapsed.toFixed(0)} s`);
  };
  const results = existing ? await runOnExistingMesh(cfg, existing, cells, runDir, progress, onCell) : await runOnOneMesh(cfg, cells, runDir, progress, onCell);
  const meta: RunMeta = {
    run,
    started_at: started.toISOString(),
    finished_at: new Date().toISOString(),
    latency,
    ...(existing ? { target: `existing mesh \`${existing.name}\` (${existing.description})` } : {}),
    host: { ...hostInfo(), note: "shared with other work; absolute times are this machine's" },
    duration_s: Math.round((performance.now() - t0) / 1000),
  };
  const { plots } = writeResults(cfg, runDir, meta, results);
  progress(`[${results.length}/${cells.length}] done in ${meta.duration_s} s: ${join(runDir, 'report.md')}${plots.length ? `, ${plots.join(', ')}` : ''}`);
  return runDir;
}

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  const cfg = loadConfig();
  switch (command) {
    case 'cell': {
      // an existing mesh is checked before anything starts; its node count is the cell's
      if (cfg.existing) requireRoot();
      const existing = cfg.existing ? await inspectExistingMesh(cfg) : null;
      const nodes = existing ? existing.nodes.length : cfg.nodes;
      await runCells(
        cfg,
        cfg.systems.map((system) => ({ system, nodes, workload: cfg.workload, days: cfg.days, requests: cfg.requests })),
        `${existing ? `${existing.name}-` : ''}n${nodes}-${cfg.workload}-d${cfg.days}-r${cfg.requests}`,
        existing,
      );
      return 0;
    }
    case 'matrix':
      if (cfg.existing) {
        throw new ScenarioError(
          'EDGE_SCENARIO_CONFIG',
          'make scenarios runs several node counts on meshes it starts; on an existing mesh (SCENARIO_TOPOLOGY) run one cell at a time with make scenario',
        );
      }
      await runCells(cfg, matrixCells(cfg), 'matrix');
      return 0;
    case 'report': {
      if (!cfg.run) throw new ScenarioError('EDGE_SCENARIO_CONFIG', 'report needs SCENARIO_RUN (the run directory name)');
      const runDir = join(cfg.resultsDir, cfg.run);
      const doc = JSON.parse(readFileSync(join(runDir, 'results.json'), 'utf8')) as { meta: RunMeta; cells: CellResult[] };
      writeResults(cfg, runDir, doc.meta, doc.cells);
      progress(`rewrote ${join(runDir, 'report.md')}`);
      return 0;
    }
    default:
      process.stderr.write('usage: scenarios cell | matrix | report\n');
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const code = err instanceof ScenarioError || (err as { code?: string }).code?.startsWith?.('EDGE_') ? ` [${(err as { code: string }).code}]` : '';
    process.stderr.write(`scenarios: ${(err as Error).message}${code}\n`);
    process.exit(1);
  },
);
