/**
 * `syncmesh logs [SERVICE]`: the last lines of a service's log on one node or all.
 *
 * Where they come from depends on the runtime (the description's `runtime` and `logs_dir`):
 * - the emulated mesh's bare processes: the files `<logs_dir>/<node>.<role>.log` on this machine;
 * - faasd nodes: the gateway's `GET /system/logs` (journald on the node, read by the faasd
 *   provider), with the gateway's credentials from `basic_auth_file`. It serves functions
 *   (`syncmesh-fn`) and, in faasd's core namespace `openfaas`, the node's own services (listener,
 *   miso-agent, mongodb, gateway) where the gateway passes that namespace on;
 * - anything else (no credentials here, a service the runtime does not have) is EDGE_CLI_NOT_AVAILABLE,
 *   with the command that reads it on the node.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VerbSpec } from '../args.js';
import { numberOption } from '../args.js';
import { pool, request } from '../client.js';
import type { Context, Verb } from '../context.js';
import { CliError } from '../errors.js';
import { findNode, type MeshDescription, type MeshNode } from '../mesh-file.js';
import { exitOf, type VerbOutcome } from '../output.js';

export const SERVICES = ['function', 'listener', 'agent', 'mongo', 'gateway', 'faasd'] as const;
type Service = (typeof SERVICES)[number];

/** The process role of each service in the emulated mesh (scenarios/mesh/src/runtime/services.ts; faasd: runtime/faasd.ts). */
const PROCESS_ROLE: Record<Service, string> = { function: 'function', listener: 'listener', agent: 'agent', mongo: 'mongo', gateway: '', faasd: 'faasd' };
/** The name the gateway's /system/logs knows each service by, and its namespace. */
const GATEWAY_NAME: Partial<Record<Service, { name: string; namespace?: string }>> = {
  function: { name: 'syncmesh-fn' },
  listener: { name: 'listener', namespace: 'openfaas' },
  agent: { name: 'miso-agent', namespace: 'openfaas' },
  mongo: { name: 'mongodb', namespace: 'openfaas' },
  gateway: { name: 'gateway', namespace: 'openfaas' },
};
/** How far back the gateway looks (its own default is 5 minutes). */
const GATEWAY_SINCE_MS = 24 * 3_600_000;

export interface LogLine {
  time?: string;
  text: string;
}

const spec: VerbSpec = {
  name: 'logs',
  summary: "The last lines of a service's log, from one node or all",
  details: [
    "Emulated mesh (bare processes): the log files in logs_dir. faasd nodes: the gateway's /system/logs",
    "(journald), with the credentials in basic_auth_file: the function always, the node's services",
    "(listener, agent, mongo, gateway) where the gateway serves faasd's core namespace. Where neither",
    'works (e.g. the credentials stay on the node), it says so and how to read the log on the node.',
  ].join('\n'),
  options: {
    node: { type: 'string', value: 'NODE', description: 'one node (id or position; default: the first node)', complete: 'node' },
    all: { type: 'boolean', description: 'every node (lines prefixed with the node)' },
    tail: { type: 'string', value: 'N', description: 'lines per node (1-10000, default 50)' },
  },
  positionals: [{ name: 'service', description: 'whose log (default: function)', complete: SERVICES }],
  examples: ['syncmesh logs', 'syncmesh logs listener --all --tail 20', 'syncmesh logs function --node node-2 --json'],
};

function notAvailable(node: MeshNode, service: Service, why: string, onNode: string): CliError {
  return new CliError('EDGE_CLI_NOT_AVAILABLE', `${node.id}: the ${service} log is not readable from here: ${why}`, { hint: `on the node: ${onNode}` });
}

function journalCommand(service: Service): string {
  const g = GATEWAY_NAME[service];
  return g ? `journalctl -t ${g.namespace ?? 'openfaas-fn'}:${g.name} -n 50` : 'journalctl -u faasd -n 50';
}

function fromFile(mesh: MeshDescription, node: MeshNode, service: Service, tail: number): { source: string; lines: LogLine[] } {
  const role = PROCESS_ROLE[service];
  const file = role && mesh.logs_dir ? join(mesh.logs_dir, `${node.id}.${role}.log`) : '';
  if (!file || !existsSync(file)) {
    throw notAvailable(
      node,
      service,
      file ? `no ${file} (the service does not run on this mesh's nodes: MESH_SERVICES)` : `a ${mesh.runtime ?? 'process'} node has no ${service}`,
      'the emulated mesh keeps every log under .mesh/<name>/logs/',
    );
  }
  const lines = readFileSync(file, 'utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  return { source: file, lines: lines.slice(-tail).map((text) => ({ text })) };
}

async function fromGateway(node: MeshNode, service: Service, tail: number, timeoutMs: number): Promise<{ source: string; lines: LogLine[] }> {
  const target = GATEWAY_NAME[service];
  if (!target) throw notAvailable(node, service, 'the gateway serves no such log', journalCommand(service));
  if (!node.gateway_url) throw notAvailable(node, service, 'the description names no gateway for this node', journalCommand(service));
  if (!node.basic_auth_file) {
    throw notAvailable(node, service, "the gateway's credentials stay on the node (basic_auth_file is null in the mesh description)", journalCommand(service));
  }
  let auth: string;
  try {
    auth = readFileSync(node.basic_auth_file, 'utf8').trim();
  } catch (err) {
    throw notAvailable(
      node,
      service,
      `cannot read ${node.basic_auth_file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      journalCommand(service),
    );
  }
  const q = new URLSearchParams({ name: target.name, follow: 'false', tail: String(tail), since: new Date(Date.now() - GATEWAY_SINCE_MS).toISOString() });
  if (target.namespace) q.set('namespace', target.namespace);
  const url = `${node.gateway_url.replace(/\/+$/, '')}/system/logs?${q.toString()}`;
  const r = await request(url, { timeoutMs, headers: { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } });
  if (r.status === 401) throw notAvailable(node, service, `the gateway refused the credentials in ${node.basic_auth_file} (401)`, journalCommand(service));
  if (r.status !== 200) throw notAvailable(node, service, `the gateway answered ${r.status}: ${r.text.trim().slice(0, 160)}`, journalCommand(service));
  const lines: LogLine[] = [];
  for (const raw of r.text.split('\n')) {
    if (raw.trim() === '') continue;
    try {
      const m = JSON.parse(raw) as { text?: string; timestamp?: string };
      lines.push({ ...(m.timestamp ? { time: m.timestamp } : {}), text: (m.text ?? '').replace(/\n$/, '') });
    } catch {
      lines.push({ text: raw });
    }
  }
  return { source: `${node.gateway_url}/system/logs (${target.namespace ?? 'openfaas-fn'}:${target.name})`, lines: lines.slice(-tail) };
}

export const logsVerb: Verb = {
  spec,
  async run(ctx: Context, args): Promise<VerbOutcome> {
    const mesh = ctx.mesh();
    const service = (args.positionals[0] ?? 'function') as Service;
    const tail = numberOption('logs', 'tail', args.values['tail'], { min: 1, max: 10_000, integer: true }) ?? 50;
    if (args.values['all'] && args.values['node'])
      throw new CliError('EDGE_CLI_USAGE', 'syncmesh logs: give --node or --all, not both', { hint: 'syncmesh logs --help' });
    const nodes = args.values['all'] ? mesh.nodes : [findNode(mesh, (args.values['node'] as string | undefined) ?? mesh.nodes[0]!.id)];
    // bare processes and the faasd runtime's own faasd log: files here; a faasd node's services: its gateway
    const fromFiles = mesh.runtime !== 'faasd' || service === 'faasd';
    const read = await pool(nodes, ctx.config.concurrency, async (n) => {
      try {
        const got = fromFiles ? fromFile(mesh, n, service, tail) : await fromGateway(n, service, tail, ctx.timeoutMs);
        return { node: n.id, ...got };
      } catch (err) {
        if (!(err instanceof CliError)) throw err;
        return { node: n.id, error: err.toJSON() };
      }
    });
    const problems = read
      .filter((r) => 'error' in r)
      .map((r) => `${String(r.error!['message'])} (${String(r.error!['code'])}); what to do: ${String(r.error!['hint'])}`);
    const many = nodes.length > 1;
    const text = read
      .filter((r) => 'lines' in r)
      .flatMap((r) => r.lines!.map((l) => `${many ? `${r.node} | ` : ''}${l.time ? `${l.time} ` : ''}${l.text}`))
      .join('\n');
    // one node that cannot be read is a failure of the verb; with --all, so is any
    return { code: exitOf(problems), result: { service, tail, nodes: read }, text, problems };
  },
};
