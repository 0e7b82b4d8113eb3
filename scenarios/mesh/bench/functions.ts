#!/usr/bin/env node
/**
 * `make bench-functions`: users' functions on a 3-node faasd mesh with the regional link profile
 * (issue 26's numbers), with the mesh's own code (mesh.ts up/down, src/deploy/deploy.ts, the demo's
 * agent byte counter):
 *
 *   deploy    an image pushed to node-1's registry (skopeo, from the miso-counter OCI archive), then
 *             deployed mesh-wide with deployFunction (mirrored node to node from node-1's registry
 *             into node-2's and node-3's, then every gateway): the time from the start of the push
 *             until the function answers on each node. The first repetition is cold (no node has
 *             the image's layers); the later ones deploy a new function from a new repository whose
 *             layers the registries and containerd already hold (what every further function built
 *             on the same template costs).
 *   registry  each node's registry container: PSS and RSS (its processes, from the node's cgroups)
 *             idle and at the peak of the mirror, and its storage on disk (the node's data partition:
 *             var-lib-faasd/registry) after the N functions.
 *   counter   miso-counter (label com.syncmesh.miso=true) on every node; each round adds +1, +2, +3
 *             at once on node-1..3, then every node's total is polled until it reads the sum: the time
 *             from sending the adds until the last node reads it (p50/p99 over the rounds), and the
 *             bytes every agent sent its peers during the round (replication + heartbeats).
 *
 * Prints its tables with the command and the load, writes bench-results/functions.json and draws
 * functions.png (bench-kit's printRows, writeResults and plotResults). The mesh is removed afterwards (also on failure or Ctrl-C).
 *
 *   node scenarios/mesh/dist/bench/functions.js [--deploys 4] [--rounds 30] [--quick] [--out F]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hostInfo, plotResults, printRows, resultsPath, summarize, writeResults } from '@syncmesh-edge/bench-kit';
import { pssBytes, rssBytes } from '@syncmesh-edge/lab';
import type { MeshConfig } from '../src/config.js';
import { agentBytes } from '../src/demo/counter.js';
import { MeshError } from '../src/errors.js';
import { deployFunction, nodesFromTopology, pushImage, removeFunction, type FunctionNode } from '../src/deploy/deploy.js';
import { linkShapes } from '../src/network/latency.js';
import { down, up, type MeshHandle } from '../src/mesh.js';
import { requireState } from '../src/plan/state.js';
import type { NodePlan } from '../src/plan/plan.js';
import { FAASD_PATHS, faasdNodePids, faasdStateDir } from '../src/runtime/faasd.js';
import type { Progress } from '../src/runtime/runtime.js';
import { runMeshBench, throwIfInterrupted } from './run.js';

const NODES = 3;
const COUNTER = 'miso-counter';
const OBJECT = 'bench';
/** How often the registries' memory is read during a mirror, and every node's total during a round. */
const SAMPLE_MS = 100;
const POLL_MS = 10;
const ROUND_DEADLINE_MS = 60_000;
/** Pause between two counter rounds, so one round's replication never runs into the next. */
const BETWEEN_ROUNDS_MS = 300;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round2 = (x: number) => Math.round(x * 100) / 100;
const MB = 1024 * 1024;

interface RegistryMemory {
  pss_bytes: number;
  rss_bytes: number;
}

/** PSS/RSS of one node's registry container (its processes in the node's cgroup). */
function registryMemory(node: NodePlan): RegistryMemory {
  const pids = faasdNodePids(node).find((s) => s.service === 'registry')?.pids ?? [];
  if (pids.length === 0) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `no running registry container on ${node.id}`);
  return { pss_bytes: pids.reduce((s, p) => s + (pssBytes(p) ?? 0), 0), rss_bytes: pids.reduce((s, p) => s + (rssBytes(p) ?? 0), 0) };
}

/** Bytes under a folder (du -sb), 0 when it does not exist. */
function diskBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split(/\s/)[0]);
}

/** The registry's storage of a node on the host: the compose volume ./registry below /var/lib/faasd. */
function registryDir(node: NodePlan): string {
  return join(faasdStateDir(node), 'var-lib-faasd', 'registry');
}

/** Reads every node's registry memory every SAMPLE_MS until stopped; keeps the peak per node. */
function memorySampler(nodes: readonly NodePlan[]): { stop: () => RegistryMemory[] } {
  const peak = nodes.map(() => ({ pss_bytes: 0, rss_bytes: 0 }));
  const read = () => {
    nodes.forEach((n, i) => {
      try {
        const m = registryMemory(n);
        peak[i]!.pss_bytes = Math.max(peak[i]!.pss_bytes, m.pss_bytes);
        peak[i]!.rss_bytes = Math.max(peak[i]!.rss_bytes, m.rss_bytes);
      } catch {
        // a container being replaced: the next sample
      }
    });
  };
  read();
  const t = setInterval(read, SAMPLE_MS);
  return {
    stop: () => {
      clearInterval(t);
      read();
      return peak;
    },
  };
}

async function counterTotal(n: FunctionNode): Promise<number | null> {
  try {
    const res = await fetch(`${n.gatewayUrl}/function/${COUNTER}?object=${OBJECT}`, { signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    return res.ok ? (JSON.parse(text) as { totalSum: number }).totalSum : null;
  } catch {
    return null;
  }
}

async function add(n: FunctionNode, k: number): Promise<void> {
  const res = await fetch(`${n.gatewayUrl}/function/${COUNTER}?object=${OBJECT}`, { method: 'POST', body: String(k), signal: AbortSignal.timeout(20_000) });
  const text = await res.text();
  if (!res.ok) throw new MeshError('EDGE_MESH_REQUEST', `${COUNTER} on ${n.id} answered HTTP ${res.status} to an add: ${text.slice(0, 200)}`);
}

interface DeployRun {
  function: string;
  cold: boolean;
  push_ms: number;
  /** from the start of the push until each node's registry held the image (node-1: the push) */
  in_registry_ms: Record<string, number>;
  /** from the start of the push until the function answered on each node */
  ready_ms: Record<string, number>;
  ready_all_ms: number;
  registry_peak: Record<string, RegistryMemory>;
}

/** Push to node-1's registry, deploy on every node; times from the start of the push. */
async function deployRun(mesh: MeshHandle, nodes: FunctionNode[], name: string, cold: boolean, labels?: Record<string, string>): Promise<DeployRun> {
  const n1 = nodes[0]!;
  const target = `${name}:1`;
  const sampler = memorySampler(mesh.plan.nodes);
  const t0 = performance.now();
  const inRegistry: Record<string, number> = {};
  let outcomes: Awaited<ReturnType<typeof deployFunction>>;
  let peak: RegistryMemory[];
  try {
    await pushImage([n1], `oci-archive:${join(FAASD_PATHS.images, `${COUNTER}.oci.tar`)}`, target);
    const pushMs = performance.now() - t0;
    inRegistry[n1.id] = pushMs;
    const tDeploy = performance.now();
    outcomes = await deployFunction(
      nodes,
      { name, image: `${n1.registry}/${target}`, ...(labels ? { labels } : {}) },
      {
        sources: [n1],
        ...(labels ? { readyPath: `?object=${OBJECT}` } : {}),
        progress: (m) => {
          // deployFunction says when each node's registry holds the image (src/fn-deploy.ts copyImage)
          const id = /^(node-\d+): image in its registry/.exec(m)?.[1];
          if (id) inRegistry[id] = performance.now() - t0;
        },
      },
    );
    peak = sampler.stop();
    const ready = Object.fromEntries(outcomes.map((o) => [o.node, round2(tDeploy - t0 + (o.readyMs ?? Number.NaN))]));
    return {
      function: name,
      cold,
      push_ms: round2(pushMs),
      in_registry_ms: Object.fromEntries(Object.entries(inRegistry).map(([k, v]) => [k, round2(v)])),
      ready_ms: ready,
      ready_all_ms: Math.max(...Object.values(ready)),
      registry_peak: Object.fromEntries(mesh.plan.nodes.map((n, i) => [n.id, peak[i]!])),
    };
  } finally {
    sampler.stop();
  }
}

async function benchFunctions(base: MeshConfig, progress: Progress, argv: string[], signal: AbortSignal): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      deploys: { type: 'string' },
      rounds: { type: 'string' },
      out: { type: 'string', default: resultsPath('functions') },
    },
  });
  const quick = values.quick!;
  const deploys = Number(values.deploys ?? (quick ? 2 : 4));
  const rounds = Number(values.rounds ?? (quick ? 10 : 30));
  for (const [k, v] of Object.entries({ deploys, rounds })) {
    if (!Number.isInteger(v) || v < 1) throw new MeshError('EDGE_MESH_CONFIG', `bench-functions: --${k} must be a positive integer, got ${v}`);
  }
  if (!existsSync(join(FAASD_PATHS.images, `${COUNTER}.oci.tar`))) {
    throw new MeshError('EDGE_MESH_TOOL_MISSING', `the image ${COUNTER} is missing in ${FAASD_PATHS.images} (make faasd-tier-deps)`);
  }
  const command = `make bench-functions${argv.length > 0 ? ` BENCH_ARGS="${argv.join(' ')}"` : ''}`;
  const hostBefore = hostInfo();
  const imageBytes = statSync(join(FAASD_PATHS.images, `${COUNTER}.oci.tar`)).size;

  const cfg: MeshConfig = { ...base, nodes: NODES, latency: 'regional', runtime: 'faasd' };
  const checkAborted = () => {
    throwIfInterrupted(signal);
  };

  const runs: DeployRun[] = [];
  const idle: Record<string, RegistryMemory> = {};
  const disk: Record<string, { before_bytes: number; after_bytes: number }> = {};
  const converge: number[] = [];
  const addsDone: number[] = [];
  const perNode: Record<string, number[]> = {};
  const bytes: number[] = [];
  let links: { from: string; to: string; one_way_ms: number }[] = [];
  let correct = true;
  let upS = 0;
  try {
    const t = performance.now();
    const mesh = await up(cfg, { progress, signal, loadData: false });
    upS = (performance.now() - t) / 1000;
    const state = requireState(cfg.stateRoot, cfg.name);
    const coords = new Map(Object.entries(state.coords).map(([k, v]) => [Number(k), v] as const));
    links = linkShapes(cfg.latency, NODES, coords).map((s) => ({ from: `node-${s.from}`, to: `node-${s.to}`, one_way_ms: s.upstream.latencyMs }));
    const nodes = nodesFromTopology(mesh.topology);
    for (const n of mesh.plan.nodes) perNode[n.id] = [];

    // idle: five reads 200 ms apart, the median of each
    const reads: RegistryMemory[][] = [];
    for (let i = 0; i < 5; i++) {
      reads.push(mesh.plan.nodes.map(registryMemory));
      await sleep(200);
    }
    mesh.plan.nodes.forEach((n, i) => {
      const med = (f: (m: RegistryMemory) => number) => summarize(reads.map((r) => f(r[i]!))).p50;
      idle[n.id] = { pss_bytes: med((m) => m.pss_bytes), rss_bytes: med((m) => m.rss_bytes) };
      disk[n.id] = { before_bytes: diskBytes(registryDir(n)), after_bytes: 0 };
    });
    progress(
      `registries idle: ${mesh.plan.nodes.map((n) => `${n.id} PSS ${(idle[n.id]!.pss_bytes / MB).toFixed(1)} MB, RSS ${(idle[n.id]!.rss_bytes / MB).toFixed(1)} MB`).join('; ')}`,
    );

    // (1) push on node-1 -> ready on all 3, then removed (its image stays in the registries)
    for (let i = 0; i < deploys; i++) {
      checkAborted();
      const name = `bench-fn-${i + 1}`;
      const r = await deployRun(mesh, nodes, name, i === 0);
      runs.push(r);
      progress(
        `${name} (${r.cold ? 'cold' : 'layers already on the nodes'}): pushed to node-1 in ${(r.push_ms / 1000).toFixed(1)} s, ready on all ${NODES} ${(r.ready_all_ms / 1000).toFixed(1)} s after the push began`,
      );
      await removeFunction(nodes, name);
    }

    // (3) the counter: deployed as any function (its push -> ready is one more sample)
    checkAborted();
    const c = await deployRun(mesh, nodes, COUNTER, false, { 'com.syncmesh.miso': 'true' });
    runs.push(c);
    progress(`${COUNTER} ready on all ${NODES} ${(c.ready_all_ms / 1000).toFixed(1)} s after the push began`);
    mesh.plan.nodes.forEach((n) => {
      disk[n.id]!.after_bytes = diskBytes(registryDir(n));
    });

    // one round not counted: the object's first use (an agent restores it from its peers first)
    let want = (await counterTotal(nodes[0]!)) ?? 0;
    for (let r = 0; r <= rounds; r++) {
      checkAborted();
      await sleep(BETWEEN_ROUNDS_MS);
      const b0 = await agentBytes(mesh);
      want += nodes.reduce((s, _, i) => s + i + 1, 0);
      const t0 = performance.now();
      await Promise.all(nodes.map((n, i) => add(n, i + 1)));
      const tAdds = performance.now() - t0;
      const seen = await Promise.all(
        nodes.map(async (n) => {
          for (;;) {
            const v = await counterTotal(n);
            if (v === want) return performance.now() - t0;
            if (v !== null && v > want) correct = false;
            if (performance.now() - t0 > ROUND_DEADLINE_MS) {
              throw new MeshError('EDGE_MESH_REQUEST', `${n.id} did not read ${want} within ${ROUND_DEADLINE_MS} ms (last: ${v})`);
            }
            await sleep(POLL_MS);
          }
        }),
      );
      const b1 = await agentBytes(mesh);
      if (r === 0) continue;
      converge.push(Math.max(...seen));
      addsDone.push(tAdds);
      for (const [i, ms] of seen.entries()) perNode[nodes[i]!.id]!.push(round2(ms));
      bytes.push(b1 - b0);
      if (r % 5 === 0 || r === rounds) progress(`round ${r}/${rounds}: every node reads ${want} after ${Math.max(...seen).toFixed(0)} ms`);
    }
  } finally {
    await down(cfg.stateRoot, cfg.name, progress);
  }

  const hostAfter = hostInfo();
  const load = (h: typeof hostBefore) => h.load_average.map((x) => x.toFixed(2)).join(' ');
  const s = (xs: number[]) => summarize(xs);
  const deployRuns = runs.filter((r) => r.function !== COUNTER);
  const warm = deployRuns.filter((r) => !r.cold);
  const nodeIds = Object.keys(idle);
  const registry = nodeIds.map((id) => ({
    node: id,
    idle_pss_bytes: idle[id]!.pss_bytes,
    idle_rss_bytes: idle[id]!.rss_bytes,
    mirror_peak_pss_bytes: Math.max(...runs.map((r) => r.registry_peak[id]!.pss_bytes)),
    mirror_peak_rss_bytes: Math.max(...runs.map((r) => r.registry_peak[id]!.rss_bytes)),
    disk_before_bytes: disk[id]!.before_bytes,
    disk_after_bytes: disk[id]!.after_bytes,
  }));
  const result = {
    command,
    date: new Date().toISOString(),
    host: hostBefore,
    load_average_after: hostAfter.load_average,
    params: { nodes: NODES, latency: cfg.latency, deploys, rounds, image: COUNTER, image_archive_bytes: imageBytes, mesh_up_s: round2(upS) },
    links,
    deploy: {
      runs,
      cold_ready_all_ms: deployRuns.find((r) => r.cold)?.ready_all_ms ?? null,
      warm_ready_all_ms: warm.length > 0 ? s(warm.map((r) => r.ready_all_ms)) : null,
      all_ready_all_ms: s(runs.map((r) => r.ready_all_ms)),
    },
    registry,
    functions_in_registries: runs.length,
    counter: {
      correct,
      converge_ms: s(converge),
      adds_acked_ms: s(addsDone),
      per_node_ms: perNode,
      rounds_ms: converge.map(round2),
      agent_bytes_per_round: s(bytes),
    },
  };
  const out = writeResults(values.out!, result);

  const f0 = (x: number) => x.toFixed(0);
  const mb = (x: number) => (x / MB).toFixed(1);
  process.stdout.write(
    `\nbench-functions: ${NODES} faasd nodes, regional link profile (one-way ${links
      .filter((l) => l.from < l.to)
      .map((l) => `${l.from}<->${l.to} ${l.one_way_ms} ms`)
      .join(', ')}), ${deploys} deploys + ${COUNTER}, ${rounds} counter rounds (+1 not counted)\n` +
      `command: ${command}\nhost: ${hostBefore.cpus} CPUs (${hostBefore.cpu_model}); load average before ${load(hostBefore)}, after ${load(hostAfter)}\n`,
  );
  printRows(
    `push on node-1 -> ready on all ${NODES} (image ${mb(imageBytes)} MB as an OCI archive)`,
    runs.map((r) => ({
      function: r.function,
      layers: r.cold ? 'cold' : 'on the nodes',
      'push ms': f0(r.push_ms),
      ...Object.fromEntries(nodeIds.map((id) => [`${id} ready ms`, f0(r.ready_ms[id]!)])),
      'all ready ms': f0(r.ready_all_ms),
    })),
  );
  printRows(
    'registry per node (PSS/RSS of its container; storage on the data partition)',
    registry.map((r) => ({
      node: r.node,
      'idle PSS MB': mb(r.idle_pss_bytes),
      'idle RSS MB': mb(r.idle_rss_bytes),
      'mirror peak PSS MB': mb(r.mirror_peak_pss_bytes),
      'mirror peak RSS MB': mb(r.mirror_peak_rss_bytes),
      [`disk after ${runs.length} functions MB`]: mb(r.disk_after_bytes),
    })),
  );
  const cs = result.counter;
  printRows(`${COUNTER}: +1/+2/+3 at once on node-1..3, until every node reads the sum (${rounds} rounds)`, [
    { what: 'every node reads the sum, ms', p50: f0(cs.converge_ms.p50), p99: f0(cs.converge_ms.p99), max: f0(cs.converge_ms.max) },
    { what: 'adds acknowledged, ms', p50: f0(cs.adds_acked_ms.p50), p99: f0(cs.adds_acked_ms.p99), max: f0(cs.adds_acked_ms.max) },
    { what: 'agent bytes per round', p50: f0(cs.agent_bytes_per_round.p50), p99: f0(cs.agent_bytes_per_round.p99), max: f0(cs.agent_bytes_per_round.max) },
  ]);
  process.stdout.write(`  every node read the exact sum in every round: ${correct}\n\nwrote ${out}\n`);
  plotResults('functions', out);
  return correct ? 0 : 1;
}

runMeshBench(benchFunctions);
