/**
 * All configuration of the measurement scenarios, read once from the environment, validated and
 * frozen. Every variable, its default and its meaning is listed in ../README.md.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ScenarioError } from './errors.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Package root, both from src/ and from dist/src/. */
export const PACKAGE_ROOT = existsSync(join(here, '..', 'package.json')) ? resolve(here, '..') : resolve(here, '..', '..');
/** Repository root (scenarios/measure/../..). */
export const REPO_ROOT = resolve(PACKAGE_ROOT, '..', '..');

export const SYSTEMS = ['baseline', 'syncmesh'] as const;
export type System = (typeof SYSTEMS)[number];
export const WORKLOADS = ['collect', 'aggregate'] as const;
export type Workload = (typeof WORKLOADS)[number];
export const PROFILES = ['none', 'site', 'regional'] as const;
export type Profile = (typeof PROFILES)[number];

/** The paper's matrix (nodes x workload x system, timespan and request count as in Table III/IV). */
export const DEFAULT_MATRIX_NODES = [3, 6, 9, 12];
export const DEFAULT_MESH_NAME = 'smsc0';
/** Unmeasured queries per cell before the capture starts (class loading, JIT). */
export const DEFAULT_WARMUP = 1;
/** CPU and memory of every process are read this often during a measured phase. */
export const DEFAULT_SAMPLE_MS = 500;
/** Peers answering a month of collect on 2 shared cores need more than the mesh's 2 s default. */
export const DEFAULT_NODE_TIMEOUT_MS = 60_000;
export const DEFAULT_DEADLINE_MS = 120_000;
/** One k6 run may take this long before it is killed. */
export const DEFAULT_K6_TIMEOUT_MS = 15 * 60_000;

const intList = (what: string) =>
  z
    .string()
    .regex(/^\d+(,\d+)*$/, `a comma-separated list of ${what}`)
    .transform((s) => s.split(',').map(Number));

/** Nodes of a single cell when SCENARIO_NODES is not set (an existing mesh: all of its nodes). */
export const DEFAULT_NODES = 3;
export const DEFAULT_LATENCY: Profile = 'regional';
/** What tcpdump captures on an existing mesh: every node's link (and the client's), or the bridge alone. */
export const CAPTURE_MODES = ['links', 'bridge'] as const;
export type CaptureMode = (typeof CAPTURE_MODES)[number];
/** SCENARIO_CAPTURE_NETNS value for "the host's own namespace". */
export const HOST_NETNS = 'host';

const envSchema = z.object({
  SCENARIO_SYSTEM: z.enum(['baseline', 'syncmesh', 'both']).optional(),
  SCENARIO_NODES: z.coerce.number().int().min(1).max(30).optional(),
  SCENARIO_WORKLOAD: z.enum(WORKLOADS).default('aggregate'),
  SCENARIO_DAYS: z.coerce.number().int().min(1).max(31).default(1),
  SCENARIO_REQUESTS: z.coerce.number().int().min(1).max(10_000).default(20),
  SCENARIO_LATENCY: z.enum(PROFILES).optional(),
  SCENARIO_RADIUS_KM: z.coerce.number().positive().optional(),
  SCENARIO_MATRIX_NODES: intList('node counts').prefault(DEFAULT_MATRIX_NODES.join(',')),
  SCENARIO_MATRIX_WORKLOADS: z
    .string()
    .regex(/^(collect|aggregate)(,(collect|aggregate))*$/, 'a comma-separated list of collect, aggregate')
    .transform((s) => s.split(',') as Workload[])
    .prefault('collect,aggregate'),
  SCENARIO_MATRIX_DAYS: intList('timespans in days').prefault('1,7'),
  SCENARIO_MATRIX_REQUESTS: intList('request counts').prefault('20'),
  SCENARIO_RESULTS_DIR: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, 'scenarios', 'results')),
  SCENARIO_RUN: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, dot, dash or underscore')
    .optional(),
  SCENARIO_MESH_NAME: z
    .string()
    .regex(/^[a-z][a-z0-9]{1,7}$/, 'a lowercase letter, then 1-7 lowercase letters or digits')
    .default(DEFAULT_MESH_NAME),
  SCENARIO_STATE_DIR: z.string().min(1).default(join(REPO_ROOT, '.mesh')),
  SCENARIO_DATA: z.string().optional(),
  SCENARIO_TOPOLOGY: z.string().optional(),
  SCENARIO_CAPTURE_NETNS: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, `a network namespace name, or '${HOST_NETNS}'`)
    .optional(),
  SCENARIO_CAPTURE: z.enum(CAPTURE_MODES).default('links'),
  SCENARIO_CENTRAL_HEAP_MB: z.coerce.number().int().min(64).max(8192).optional(),
  SCENARIO_MONGO_STORAGE: z.enum(['memory', 'disk']).default('memory'),
  SCENARIO_WARMUP: z.coerce.number().int().min(0).max(100).default(DEFAULT_WARMUP),
  SCENARIO_SAMPLE_MS: z.coerce.number().int().min(50).max(10_000).default(DEFAULT_SAMPLE_MS),
  SCENARIO_KEEP_PCAP: z.enum(['true', 'false']).default('true'),
  SCENARIO_PLOTS: z.enum(['true', 'false']).default('true'),
  K6_BIN: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, '.cache', 'bin', 'k6')),
  SCENARIO_PYTHON: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, '.cache', 'venv', 'bin', 'python')),
  TOXIPROXY_BIN: z
    .string()
    .min(1)
    .default(join(REPO_ROOT, '.cache', 'bin', 'toxiproxy-server')),
});

export interface MatrixConfig {
  readonly nodes: readonly number[];
  readonly workloads: readonly Workload[];
  readonly days: readonly number[];
  readonly requests: readonly number[];
}

/** An existing mesh to measure instead of one the scenarios start (SCENARIO_TOPOLOGY). */
export interface ExistingMeshConfig {
  /** Its topology.json (scenarios/mesh's format; Terraform's local scenarios write one too). */
  readonly topologyPath: string;
  /** Namespace holding the bridge and the nodes' links: null the host's, undefined from the topology. */
  readonly captureNetns: string | null | undefined;
  readonly capture: CaptureMode;
  /** SCENARIO_NODES / SCENARIO_LATENCY when set: must agree with the topology. */
  readonly requestedNodes: number | undefined;
  readonly requestedLatency: Profile | undefined;
}

export interface ScenarioConfig {
  readonly systems: readonly System[];
  readonly nodes: number;
  readonly workload: Workload;
  readonly days: number;
  readonly requests: number;
  readonly latency: Profile;
  /** Syncmesh: only nodes within this distance of the entry node; undefined asks all. */
  readonly radiusKm: number | undefined;
  readonly matrix: MatrixConfig;
  readonly resultsDir: string;
  /** Run id (directory under resultsDir); undefined means a timestamp. */
  readonly run: string | undefined;
  readonly meshName: string;
  readonly stateDir: string;
  readonly dataDir: string | undefined;
  /** Measure this existing mesh (syncmesh only) instead of starting one; null: start one. */
  readonly existing: ExistingMeshConfig | null;
  /**
   * Fixed heap of the central server; undefined: the mesh nodes' heap (MESH_MONGO_HEAP_MB) times
   * the node count, so both systems give the database the same memory per reading.
   */
  readonly centralHeapMb: number | undefined;
  readonly warmup: number;
  /** Storage of every test server, nodes and central alike (MESH_MONGO_STORAGE). */
  readonly mongoStorage: 'memory' | 'disk';
  readonly sampleMs: number;
  readonly keepPcap: boolean;
  readonly plots: boolean;
  readonly k6Bin: string;
  readonly python: string;
  readonly toxiproxyBin: string;
  readonly k6Dir: string;
  readonly plotScript: string;
}

/** Reads the configuration from `env` (tests pass their own). Throws EDGE_SCENARIO_CONFIG naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ScenarioConfig {
  // make passes unset variables as empty strings: treat them as unset
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ScenarioError('EDGE_SCENARIO_CONFIG', `invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  const topology = e.SCENARIO_TOPOLOGY;
  if (topology && e.SCENARIO_SYSTEM && e.SCENARIO_SYSTEM !== 'syncmesh') {
    throw new ScenarioError(
      'EDGE_SCENARIO_CONFIG',
      `SCENARIO_SYSTEM=${e.SCENARIO_SYSTEM} needs the baseline's central server, which an existing mesh (SCENARIO_TOPOLOGY=${topology}) does not have: the baseline ships every node's readings from the node itself into one central database, and the harness cannot run its loader on the mesh's machines. Use SCENARIO_SYSTEM=syncmesh (the default with a topology), or drop SCENARIO_TOPOLOGY to compare both systems on a mesh the scenario starts`,
    );
  }
  if (!topology && (e.SCENARIO_CAPTURE_NETNS !== undefined || cleaned['SCENARIO_CAPTURE'] !== undefined)) {
    throw new ScenarioError('EDGE_SCENARIO_CONFIG', 'SCENARIO_CAPTURE_NETNS and SCENARIO_CAPTURE apply to an existing mesh only: set SCENARIO_TOPOLOGY too');
  }
  const system = e.SCENARIO_SYSTEM ?? (topology ? 'syncmesh' : 'both');
  const systems: System[] = system === 'both' ? [...SYSTEMS] : [system];
  const existing: ExistingMeshConfig | null = topology
    ? Object.freeze({
        topologyPath: resolve(topology),
        captureNetns: e.SCENARIO_CAPTURE_NETNS === HOST_NETNS ? null : e.SCENARIO_CAPTURE_NETNS,
        capture: e.SCENARIO_CAPTURE,
        requestedNodes: e.SCENARIO_NODES,
        requestedLatency: e.SCENARIO_LATENCY,
      })
    : null;
  return Object.freeze({
    systems,
    nodes: e.SCENARIO_NODES ?? DEFAULT_NODES,
    workload: e.SCENARIO_WORKLOAD,
    days: e.SCENARIO_DAYS,
    requests: e.SCENARIO_REQUESTS,
    latency: e.SCENARIO_LATENCY ?? DEFAULT_LATENCY,
    radiusKm: e.SCENARIO_RADIUS_KM,
    matrix: Object.freeze({
      nodes: e.SCENARIO_MATRIX_NODES,
      workloads: e.SCENARIO_MATRIX_WORKLOADS,
      days: e.SCENARIO_MATRIX_DAYS,
      requests: e.SCENARIO_MATRIX_REQUESTS,
    }),
    resultsDir: resolve(e.SCENARIO_RESULTS_DIR),
    run: e.SCENARIO_RUN,
    meshName: e.SCENARIO_MESH_NAME,
    stateDir: resolve(e.SCENARIO_STATE_DIR),
    dataDir: e.SCENARIO_DATA ? resolve(e.SCENARIO_DATA) : undefined,
    existing,
    centralHeapMb: e.SCENARIO_CENTRAL_HEAP_MB,
    warmup: e.SCENARIO_WARMUP,
    mongoStorage: e.SCENARIO_MONGO_STORAGE,
    sampleMs: e.SCENARIO_SAMPLE_MS,
    keepPcap: e.SCENARIO_KEEP_PCAP === 'true',
    plots: e.SCENARIO_PLOTS === 'true',
    k6Bin: resolve(e.K6_BIN),
    python: e.SCENARIO_PYTHON,
    toxiproxyBin: resolve(e.TOXIPROXY_BIN),
    k6Dir: join(REPO_ROOT, 'scenarios', 'k6'),
    plotScript: join(PACKAGE_ROOT, 'scripts', 'plot.py'),
  });
}
