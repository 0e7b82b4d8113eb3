/**
 * `syncmesh status`: every node at once, each within the deadline (--timeout-ms), every check of a
 * node in parallel. Per node: reachable, versions, each service's health, the registry's peers,
 * replication per subscriber, clock offset, disk free, the last error.
 *
 * Where each fact comes from:
 * - function: GET /healthz (alive, its node id and clock), GET /readyz (database, start-up, and the
 *   replication progress when the function reports it), GET /metrics (version, outbox and lag per
 *   subscriber), the registry (`nodes`, a meta read);
 * - listener: GET /readyz and /metrics at `listener_url`, when the description has one;
 * - agent: a TCP connect to `agent_address` (the agent's port answers only its own protocol);
 * - gateway (faasd nodes): GET /healthz, and /system/info with the gateway's credentials when the
 *   description has them (`basic_auth_file`);
 * - disk free: no node exposes it yet (node-exporter comes with the node's Prometheus), so "n/a".
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { metricValue, parseMetrics, selectSamples, type Sample } from '@syncmesh-edge/prometheus';
import type { VerbSpec } from '../args.js';
import { functionPath, jsonOf, meta, pool, request, type HttpResult } from '../client.js';
import type { Context, Verb } from '../context.js';
import { CliError, type CliErrorCode } from '../errors.js';
import { findNode, type MeshNode } from '../mesh-file.js';
import { ms, num, table, exitOf, type VerbOutcome } from '../output.js';
import { credentialIfReadable, type Credential } from '../signing.js';

/** The codes of status's problem lines (they are lines, not thrown: every node is reported). */
const UNREACHABLE: CliErrorCode = 'EDGE_CLI_UNREACHABLE';
const UNHEALTHY: CliErrorCode = 'EDGE_CLI_UNHEALTHY';

/** A clock further off than this is a problem: signed requests fail beyond the replay window (30 s by default). */
export const CLOCK_PROBLEM_MS = 15_000;

export type ServiceState = 'ok' | 'not ready' | 'down' | 'n/a';

export interface ServiceStatus {
  state: ServiceState;
  detail?: string;
  ms?: number;
}

export interface SubscriberStatus {
  id: string;
  /** From /metrics: batches not yet acknowledged, and the age of the oldest (s). */
  outbox_batches: number | null;
  lag_s: number | null;
  /** From /readyz's replication progress, when the function reports it. */
  progress?: Record<string, unknown>;
}

export interface NodeStatus {
  id: string;
  reachable: boolean;
  /** Time the node's checks took (they run in parallel). */
  ms: number;
  versions: { function: string | null; listener: string | null; gateway: string | null; faasd: string | null };
  services: { function: ServiceStatus; listener: ServiceStatus; agent: ServiceStatus; gateway: ServiceStatus };
  /** The node's registry without itself: id, address, whether it subscribes to this node. Null when it could not be read. */
  peers: Array<{ id: string; address: string; subscribed: boolean }> | null;
  replication: { subscribers: SubscriberStatus[]; snapshots: unknown[] | null } | null;
  listener: { events_read: number; events_acknowledged: number; resyncs: number; queued: number; lag_s: number } | null;
  /** The node's clock minus this machine's, from the function's /healthz time (or the HTTP Date header, to 1 s). */
  clock_offset_ms: number | null;
  clock_source: 'healthz' | 'date-header' | null;
  disk_free_bytes: number | null;
  disk_free_note: string;
  last_error: string | null;
}

const DISK_NOTE = 'not exposed by the node yet (node-exporter arrives with the node Prometheus of issue 32, phase 2)';

const spec: VerbSpec = {
  name: 'status',
  summary: 'Health of every node: services, versions, peers, replication lag, clock offset, disk, last error',
  details: [
    'Asks every node at once (SYNCMESH_CONCURRENCY at most), each within --timeout-ms. Exits 1 with one',
    'line per problem on stderr when a node does not answer or a service is down or not ready.',
    'Disk free is "n/a" until the nodes expose host metrics.',
  ].join('\n'),
  options: {},
  positionals: [{ name: 'node', description: 'only these nodes (ids or positions); default: every node', rest: true, complete: 'node' }],
  examples: ['syncmesh status', 'syncmesh status node-2 --json', 'syncmesh status --mesh .mesh/smt3/topology.json --timeout-ms 20000'],
};

function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: Error }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error: error as Error }),
  );
}

function tcpOpen(address: string, timeoutMs: number): Promise<number> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i);
  const port = Number(address.slice(i + 1));
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new CliError('EDGE_CLI_UNREACHABLE', `TCP ${address}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(performance.now() - t0);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new CliError('EDGE_CLI_UNREACHABLE', `TCP ${address}: ${err.code === 'ECONNREFUSED' ? 'connection refused' : (err.code ?? err.message)}`));
    });
  });
}

function metricsOf(r: HttpResult): Sample[] {
  if (r.status !== 200) throw new CliError('EDGE_CLI_BAD_ANSWER', `${r.url} answered ${r.status}`);
  return parseMetrics(r.text);
}

function versionIn(samples: Sample[], name: string): string | null {
  return selectSamples(samples, name)[0]?.labels['version'] ?? null;
}

/** The reason a 503 /readyz gives, in a few words. */
function notReadyDetail(body: Record<string, unknown>): string {
  if (typeof body['reason'] === 'string') return body['reason'];
  const collections = body['collections'];
  if (Array.isArray(collections)) {
    return collections
      .filter((c: { streamState?: string; deliveryState?: string }) => c.streamState !== 'streaming' || c.deliveryState !== 'delivering')
      .map((c: { ns?: string; streamState?: string; deliveryState?: string }) => `${c.ns}: stream ${c.streamState}, delivery ${c.deliveryState}`)
      .join('; ');
  }
  return 'not ready';
}

async function checkNode(node: MeshNode, timeoutMs: number, credential: Credential | undefined): Promise<{ status: NodeStatus; problems: string[] }> {
  const t0 = performance.now();
  const get = (url: string, headers: Record<string, string> = {}) => request(url, { timeoutMs, headers });
  const wallAtStart = Date.now();
  const gatewayAuth = (() => {
    if (!node.basic_auth_file) return undefined;
    try {
      return `Basic ${Buffer.from(readFileSync(node.basic_auth_file, 'utf8').trim()).toString('base64')}`;
    } catch {
      return undefined; // not readable here: the versions from /system/info stay unknown
    }
  })();

  const [healthz, readyz, fnMetrics, registry, lReady, lMetrics, agent, gwHealth, gwInfo] = await Promise.all([
    settle(get(functionPath(node, '/healthz'))),
    settle(get(functionPath(node, '/readyz'))),
    settle(get(functionPath(node, '/metrics'))),
    settle(meta(node, '{ nodes { id address subscribed own_node } }', {}, { timeoutMs, credential })),
    node.listener_url ? settle(get(`${node.listener_url.replace(/\/+$/, '')}/readyz`)) : undefined,
    node.listener_url ? settle(get(`${node.listener_url.replace(/\/+$/, '')}/metrics`)) : undefined,
    node.agent_address ? settle(tcpOpen(node.agent_address, timeoutMs)) : undefined,
    node.gateway_url ? settle(get(`${node.gateway_url.replace(/\/+$/, '')}/healthz`)) : undefined,
    node.gateway_url && gatewayAuth ? settle(get(`${node.gateway_url.replace(/\/+$/, '')}/system/info`, { authorization: gatewayAuth })) : undefined,
  ]);

  const errors: string[] = [];
  const s: NodeStatus = {
    id: node.id,
    reachable: false,
    ms: 0,
    versions: { function: null, listener: null, gateway: null, faasd: null },
    services: { function: { state: 'down' }, listener: { state: 'n/a' }, agent: { state: 'n/a' }, gateway: { state: 'n/a' } },
    peers: null,
    replication: null,
    listener: null,
    clock_offset_ms: null,
    clock_source: null,
    disk_free_bytes: null,
    disk_free_note: DISK_NOTE,
    last_error: null,
  };

  // function
  if (healthz.ok && healthz.value.status === 200) {
    s.reachable = true;
    const body = settleJson(healthz.value);
    const mid = wallAtStart + healthz.value.ms / 2;
    if (typeof body['time'] === 'string' && Number.isFinite(Date.parse(body['time']))) {
      s.clock_offset_ms = Math.round(Date.parse(body['time']) - mid);
      s.clock_source = 'healthz';
    } else if (healthz.value.headers.get('date')) {
      s.clock_offset_ms = Math.round(Date.parse(healthz.value.headers.get('date')!) - mid);
      s.clock_source = 'date-header';
    }
    if (typeof body['node'] === 'string' && body['node'] !== node.id) {
      errors.push(`the function answers as '${body['node']}', the mesh description calls it '${node.id}': signed requests to it fail`);
    }
    s.services.function = readiness('function', readyz, errors);
    const progress = readyz.ok ? (settleJson(readyz.value)['replication'] as Record<string, unknown> | undefined) : undefined;
    s.replication = replicationOf(fnMetrics, progress);
    if (fnMetrics.ok && fnMetrics.value.status === 200) {
      s.versions.function = safe(() => versionIn(metricsOf(fnMetrics.value), 'edge_syncmesh_build_info'));
    }
  } else {
    const why = healthz.ok ? `GET ${healthz.value.url} answered ${healthz.value.status}` : healthz.error.message;
    s.services.function = { state: 'down', detail: why };
    errors.push(`function: ${why}`);
  }
  if (registry.ok) {
    const nodes = (registry.value['nodes'] as Array<{ id: string; address: string; subscribed: boolean; own_node: boolean }>) ?? [];
    s.peers = nodes.filter((n) => !n.own_node && n.id !== node.id).map(({ id, address, subscribed }) => ({ id, address, subscribed }));
  } else if (s.reachable) {
    errors.push(`registry: ${registry.error.message}`);
  }

  // listener
  if (lReady) {
    if (lReady.ok) s.reachable = true;
    s.services.listener = readiness('listener', lReady, errors);
    if (lMetrics?.ok && lMetrics.value.status === 200) {
      const m = safe(() => metricsOf(lMetrics.value));
      if (m) {
        s.versions.listener = versionIn(m, 'edge_listener_build_info');
        const sum = (name: string) => selectSamples(m, name).reduce((t, x) => t + x.value, 0);
        s.listener = {
          events_read: sum('edge_listener_events_read_total'),
          events_acknowledged: sum('edge_listener_events_acknowledged_total'),
          resyncs: sum('edge_listener_resyncs_total'),
          queued: sum('edge_listener_queued_events'),
          lag_s: Math.max(0, ...selectSamples(m, 'edge_listener_lag_seconds').map((x) => x.value)),
        };
      }
    }
  }

  // agent
  if (agent) {
    if (agent.ok) {
      s.reachable = true;
      s.services.agent = { state: 'ok', detail: 'port open', ms: Math.round(agent.value) };
    } else {
      s.services.agent = { state: 'down', detail: agent.error.message };
      errors.push(`agent: ${agent.error.message}`);
    }
  }

  // gateway
  if (gwHealth) {
    if (gwHealth.ok && gwHealth.value.status === 200) {
      s.reachable = true;
      s.services.gateway = { state: 'ok', ms: Math.round(gwHealth.value.ms) };
    } else {
      const why = gwHealth.ok ? `GET ${gwHealth.value.url} answered ${gwHealth.value.status}` : gwHealth.error.message;
      s.services.gateway = { state: 'down', detail: why };
      errors.push(`gateway: ${why}`);
    }
    if (gwInfo?.ok && gwInfo.value.status === 200) {
      const info = settleJson(gwInfo.value) as { version?: { release?: string }; provider?: { version?: { release?: string } } };
      s.versions.gateway = info.version?.release ?? null;
      s.versions.faasd = info.provider?.version?.release ?? null;
    }
  }

  if (s.clock_offset_ms !== null && Math.abs(s.clock_offset_ms) >= CLOCK_PROBLEM_MS) {
    errors.push(
      `clock ${s.clock_offset_ms > 0 ? 'ahead' : 'behind'} by ${num(Math.abs(s.clock_offset_ms) / 1000, 1)} s: signed requests fail beyond the replay window`,
    );
  }
  const lastReplicationError = s.replication?.subscribers
    .map((x) => (x.progress?.['last_error'] as { message?: string } | null | undefined)?.message)
    .find((m) => typeof m === 'string');
  s.last_error = errors[0] ?? (lastReplicationError ? `replication: ${lastReplicationError}` : null);
  s.ms = Math.round(performance.now() - t0);
  return { status: s, problems: errors };
}

function safe<T>(fn: () => T): T | null {
  try {
    return fn();
  } catch {
    return null; // an unreadable metrics answer leaves that fact unknown; the service states say why
  }
}

/** A service's state from its /readyz: ok (200), not ready (with the reason it gives) or down; each problem is added to `errors`. */
function readiness(service: string, r: { ok: true; value: HttpResult } | { ok: false; error: Error }, errors: string[]): ServiceStatus {
  if (!r.ok) {
    errors.push(`${service}: ${r.error.message}`);
    return { state: 'down', detail: r.error.message };
  }
  if (r.value.status === 200) return { state: 'ok', ms: Math.round(r.value.ms) };
  const detail = notReadyDetail(settleJson(r.value));
  errors.push(`${service} not ready: ${detail}`);
  return { state: 'not ready', detail, ms: Math.round(r.value.ms) };
}

function settleJson(r: HttpResult): Record<string, unknown> {
  return safe(() => jsonOf(r)) ?? {};
}

/** Per subscriber: the outbox from /metrics, the progress from /readyz (when the function reports it). */
function replicationOf(
  m: { ok: true; value: HttpResult } | { ok: false; error: Error },
  progress: Record<string, unknown> | undefined,
): NodeStatus['replication'] {
  const samples = m.ok && m.value.status === 200 ? safe(() => metricsOf(m.value)) : null;
  const ids = new Set<string>();
  for (const x of samples ? selectSamples(samples, 'edge_syncmesh_outbox_batches') : []) if (x.labels['subscriber']) ids.add(x.labels['subscriber']);
  const bySubscriber = (progress?.['subscribers'] ?? {}) as Record<string, Record<string, unknown>>;
  for (const id of Object.keys(bySubscriber)) ids.add(id);
  if (!samples && !progress) return null;
  return {
    subscribers: [...ids].sort().map((id) => ({
      id,
      outbox_batches: samples ? metricValue(samples, 'edge_syncmesh_outbox_batches', { subscriber: id }) : null,
      lag_s: samples ? Math.round(metricValue(samples, 'edge_syncmesh_replication_lag_seconds', { subscriber: id }) * 10) / 10 : null,
      ...(bySubscriber[id] ? { progress: bySubscriber[id] } : {}),
    })),
    snapshots: Array.isArray(progress?.['snapshots']) ? (progress['snapshots'] as unknown[]) : null,
  };
}

function serviceCell(x: ServiceStatus): string {
  return x.state === 'ok' ? 'ok' : x.state;
}

function replicationCell(s: NodeStatus): string {
  if (!s.replication) return '?';
  if (s.replication.subscribers.length === 0) return 'no subscribers';
  return s.replication.subscribers
    .map((x) => {
      const pending = x.progress?.['readings_pending'];
      return `${x.id}: ${x.outbox_batches ?? '?'} batches${typeof pending === 'number' ? ` (${num(pending)} readings)` : ''}, ${x.lag_s ?? '?'} s`;
    })
    .join('; ');
}

function render(nodes: NodeStatus[], mesh: string, elapsedMs: number): string {
  const rows = nodes.map((s) => [
    s.id,
    s.reachable ? 'yes' : 'NO',
    serviceCell(s.services.function),
    serviceCell(s.services.listener),
    serviceCell(s.services.agent),
    serviceCell(s.services.gateway),
    [s.versions.function ?? '?', s.versions.gateway ? `gw ${s.versions.gateway}` : '', s.versions.faasd ? `faasd ${s.versions.faasd}` : '']
      .filter(Boolean)
      .join(' '),
    s.peers ? `${s.peers.length}` : '?',
    replicationCell(s),
    s.clock_offset_ms === null ? '?' : `${s.clock_offset_ms >= 0 ? '+' : ''}${ms(s.clock_offset_ms)}`,
    s.disk_free_bytes === null ? 'n/a' : `${num(s.disk_free_bytes / 1e9, 1)} GB`,
    s.last_error ?? '-',
  ]);
  const head = ['NODE', 'UP', 'FUNCTION', 'LISTENER', 'AGENT', 'GATEWAY', 'VERSION', 'PEERS', 'REPLICATION (outbox, lag)', 'CLOCK', 'DISK', 'LAST ERROR'];
  const listeners = nodes.filter((s) => s.listener);
  const extra = listeners.length
    ? `\n\n${table(
        ['NODE', 'LISTENER EVENTS (acknowledged / read)', 'QUEUED', 'LAG', 'RESYNCS'],
        listeners.map((s) => [
          s.id,
          `${num(s.listener!.events_acknowledged)} / ${num(s.listener!.events_read)}`,
          num(s.listener!.queued),
          `${num(s.listener!.lag_s, 1)} s`,
          num(s.listener!.resyncs),
        ]),
      )}`
    : '';
  return `${table(head, rows)}${extra}\n\nmesh ${mesh}: ${nodes.filter((s) => s.reachable).length} of ${nodes.length} nodes reachable, checked in ${ms(elapsedMs)}; disk: ${DISK_NOTE}`;
}

export const statusVerb: Verb = {
  spec,
  async run(ctx: Context, args): Promise<VerbOutcome> {
    const mesh = ctx.mesh();
    const nodes = args.positionals.length ? args.positionals.map((r) => findNode(mesh, r)) : mesh.nodes;
    const t0 = performance.now();
    const credential = credentialIfReadable(mesh);
    const checked = await pool(nodes, ctx.config.concurrency, (n) => checkNode(n, ctx.timeoutMs, credential));
    const elapsedMs = Math.round(performance.now() - t0);
    const statuses = checked.map((c) => c.status);
    const problems: string[] = [];
    for (const { status: s, problems: own } of checked) {
      if (!s.reachable) problems.push(`${s.id}: unreachable (${UNREACHABLE}): ${own.join('; ')}`);
      else for (const p of own) problems.push(`${s.id}: ${p} (${UNHEALTHY})`);
    }
    return {
      code: exitOf(problems),
      result: { mesh: mesh.mesh, mesh_file: mesh.path, checked_at: new Date().toISOString(), elapsed_ms: elapsedMs, nodes: statuses, problems },
      text: render(statuses, mesh.mesh, elapsedMs),
      problems,
    };
  },
};
