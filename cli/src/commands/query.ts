/**
 * `syncmesh query collect|aggregate|stats`: one request to one node (the entry node), which asks
 * the mesh (its registry's nodes, within --radius) and answers for all of them. The trace table is
 * the answer's own account of who answered (`extensions.nodes`: status, time, bytes per node; see
 * functions/syncmesh/README.md, "Requests"), with the entry node's first row measured here.
 */
import { readFileSync } from 'node:fs';
import { EXIT } from '@syncmesh-edge/log/exit';
import type { VerbSpec } from '../args.js';
import { numberOption } from '../args.js';
import { postFunction, refusal } from '../client.js';
import type { Context, Verb } from '../context.js';
import { CliError } from '../errors.js';
import { findNode } from '../mesh-file.js';
import { bytes, ms, num, table, type VerbOutcome } from '../output.js';
import { readKeyFile } from '../signing.js';

export const KINDS = ['collect', 'aggregate', 'stats'] as const;

/** Every statistic of every metric: what `stats` asks for. */
const STATS_FIELDS = ['count', ...['temperature', 'humidity', 'pressure'].flatMap((m) => ['average', 'min', 'max'].map((f) => `${f}_${m}`))].join(' ');

/** One row of the trace: a node that was asked. */
export interface TraceRow {
  node: string;
  /** `entry` for the node the request went to; else ok, failed, timeout, duplicate. */
  status: string;
  /** Round trip as the asking side measured it (for the entry node: this machine). */
  ms: number | null;
  /** Answer bytes as received by the asking side. */
  bytes: number | null;
  /** What the node itself reported: its time and its database's. */
  node_ms: number | null;
  db_ms: number | null;
  code?: string;
  reason?: string;
  covered_by?: string;
}

const spec: VerbSpec = {
  name: 'query',
  summary: 'Ask the mesh (collect, aggregate, or stats) through one node, with who answered, how fast and how much',
  details: [
    'collect and aggregate take a GraphQL QUERY (functions/syncmesh/README.md, "Data schema"); stats asks',
    'for count, average, min and max of every metric (--start, --end, --sensor narrow it). The entry',
    "node asks its registry's nodes (--radius: only those within so many km; --local: nobody else).",
    'A partial answer (a node missing) is printed with a warning on stderr and exits 0.',
  ].join('\n'),
  options: {
    node: { type: 'string', value: 'NODE', description: 'the entry node (id or position; default: the first node)', complete: 'node' },
    file: { type: 'string', value: 'FILE', description: 'read the GraphQL query from a file (- : stdin)', complete: 'file' },
    variables: { type: 'string', value: 'JSON', description: 'GraphQL variables as a JSON object' },
    radius: { type: 'string', value: 'KM', description: 'only registry nodes within this distance of the entry node' },
    local: { type: 'boolean', description: 'the entry node alone (no forwarding)' },
    start: { type: 'string', value: 'TIME', description: 'stats: first reading (ISO 8601; default: open)' },
    end: { type: 'string', value: 'TIME', description: 'stats: last reading (ISO 8601; default: open)' },
    sensor: { type: 'string', value: 'N', description: 'stats: one sensor id' },
    'key-file': { type: 'string', value: 'FILE', description: 'send Authorization: Bearer <key in FILE> (nodes with SYNCMESH_READ_KEY)', complete: 'file' },
  },
  positionals: [
    { name: 'kind', description: 'what to ask', required: true, complete: KINDS },
    { name: 'query', description: 'the GraphQL query (collect, aggregate)' },
  ],
  examples: [
    'syncmesh query stats --start 2017-07-01T00:00:00Z --end 2017-07-31T23:59:59Z',
    "syncmesh query aggregate '{ sensorsAggregate { count average_temperature } }' --radius 50",
    "syncmesh query collect '{ sensors(limit: 5) { timestamp temperature } }' --node node-2 --json",
  ],
};

function isoOption(name: string, raw: string | boolean | undefined): string | undefined {
  if (typeof raw !== 'string') return undefined;
  if (!Number.isFinite(Date.parse(raw)))
    throw new CliError('EDGE_CLI_USAGE', `syncmesh query: --${name} '${raw}' is not a date-time`, { hint: 'ISO 8601, e.g. 2017-07-01T00:00:00Z' });
  return raw;
}

function queryText(kind: string, positional: string | undefined, file: string | undefined, values: Record<string, string | boolean | undefined>): string {
  if (kind === 'stats') {
    if (positional !== undefined || file !== undefined)
      throw new CliError('EDGE_CLI_USAGE', 'syncmesh query stats takes no QUERY', { hint: 'use query aggregate QUERY for your own' });
    const start = isoOption('start', values['start']);
    const end = isoOption('end', values['end']);
    const sensor = numberOption('query', 'sensor', values['sensor'], { min: 0, max: 2 ** 31 - 1, integer: true });
    const args = [
      start && `start_time: ${JSON.stringify(start)}`,
      end && `end_time: ${JSON.stringify(end)}`,
      sensor !== undefined && `sensor_id: ${sensor}`,
    ].filter(Boolean);
    return `{ sensorsAggregate${args.length ? `(${args.join(', ')})` : ''} { ${STATS_FIELDS} } }`;
  }
  if (positional !== undefined && file !== undefined)
    throw new CliError('EDGE_CLI_USAGE', 'syncmesh query: give QUERY or --file, not both', { hint: 'syncmesh query --help' });
  if (file !== undefined) {
    try {
      return readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (err) {
      throw new CliError('EDGE_CLI_INPUT', `cannot read the query from ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
        hint: 'check the path',
      });
    }
  }
  if (positional === undefined)
    throw new CliError('EDGE_CLI_USAGE', `syncmesh query ${kind}: missing QUERY (or --file FILE)`, { hint: 'syncmesh query --help' });
  return positional;
}

export const queryVerb: Verb = {
  spec,
  async run(ctx: Context, args): Promise<VerbOutcome> {
    const mesh = ctx.mesh();
    const [kind, positional] = args.positionals as [string, string | undefined];
    const v = args.values;
    const text = queryText(kind, positional, v['file'] as string | undefined, v);
    let variables: unknown = {};
    if (typeof v['variables'] === 'string') {
      try {
        variables = JSON.parse(v['variables']);
      } catch (err) {
        throw new CliError('EDGE_CLI_USAGE', `syncmesh query: --variables is not JSON: ${(err as Error).message}`, { hint: `e.g. --variables '{"n": 5}'` });
      }
      if (typeof variables !== 'object' || variables === null || Array.isArray(variables)) {
        throw new CliError('EDGE_CLI_USAGE', 'syncmesh query: --variables must be a JSON object', { hint: `e.g. --variables '{"n": 5}'` });
      }
    }
    const radius = numberOption('query', 'radius', v['radius'], { min: 0, max: 20_037 });
    if (radius !== undefined && v['local'])
      throw new CliError('EDGE_CLI_USAGE', 'syncmesh query: --radius and --local exclude each other', { hint: 'syncmesh query --help' });
    const node = findNode(mesh, (v['node'] as string | undefined) ?? mesh.nodes[0]!.id);
    const bearer = typeof v['key-file'] === 'string' ? readKeyFile(v['key-file'], 'key') : undefined;
    const envelope = {
      query: text,
      variables,
      request_type: kind === 'collect' ? 'collect' : 'aggregate',
      use_meta_data: v['local'] !== true,
      ...(radius !== undefined ? { radius } : {}),
    };
    const r = await postFunction(node, envelope, { timeoutMs: ctx.timeoutMs, bearer });
    if (r.status !== 200 || (r.answer.errors?.length ?? 0) > 0) throw refusal(node, r, 'the query');
    const ext = (r.answer.extensions ?? {}) as {
      node?: string;
      timing?: { ms?: number; db_ms?: number };
      nodes?: Array<Record<string, unknown>>;
      asked?: number;
      answered?: number;
      partial?: boolean;
    };
    const trace: TraceRow[] = [
      {
        node: ext.node ?? node.id,
        status: 'entry',
        ms: Math.round(r.ms * 10) / 10,
        bytes: r.bytes,
        node_ms: ext.timing?.ms ?? null,
        db_ms: ext.timing?.db_ms ?? null,
      },
      ...(ext.nodes ?? []).map((n) => ({
        node: String(n['node']),
        status: String(n['status']),
        ms: typeof n['ms'] === 'number' ? n['ms'] : null,
        bytes: typeof n['bytes'] === 'number' ? n['bytes'] : null,
        node_ms: typeof n['node_ms'] === 'number' ? n['node_ms'] : null,
        db_ms: typeof n['db_ms'] === 'number' ? n['db_ms'] : null,
        ...(typeof n['code'] === 'string' ? { code: n['code'] } : {}),
        ...(typeof n['reason'] === 'string' ? { reason: n['reason'] } : {}),
        ...(typeof n['covered_by'] === 'string' ? { covered_by: n['covered_by'] } : {}),
      })),
    ];
    const partial = ext.partial === true;
    const problems = partial
      ? [
          `partial answer: ${trace
            .filter((t) => t.code && !t.covered_by)
            .map((t) => `${t.node} ${t.status} (${t.code})`)
            .join(', ')} missing`,
        ]
      : [];
    const cell = (x: number | null, f: (n: number) => string) => (x === null ? '-' : f(x));
    const textOut = [
      JSON.stringify(r.answer.data, null, 2),
      '',
      table(
        ['NODE', 'STATUS', 'TIME', 'BYTES', 'NODE TIME', 'DB TIME', 'NOTE'],
        trace.map((t) => [
          t.node,
          t.status,
          cell(t.ms, ms),
          cell(t.bytes, bytes),
          cell(t.node_ms, ms),
          cell(t.db_ms, ms),
          [t.code, t.reason, t.covered_by && `answered for by ${t.covered_by}`].filter(Boolean).join(': '),
        ]),
      ),
      '',
      `${kind} via ${node.id}: ${num(ext.answered ?? trace.length)} of ${num(ext.asked ?? trace.length)} nodes answered${partial ? ' (PARTIAL)' : ''}, ${ms(r.ms)}, ${bytes(r.bytes)}`,
    ].join('\n');
    return {
      code: EXIT.OK,
      result: {
        kind,
        node: node.id,
        data: r.answer.data ?? null,
        trace,
        asked: ext.asked ?? null,
        answered: ext.answered ?? null,
        partial,
        ms: r.ms,
        bytes: r.bytes,
        extensions: ext,
      },
      text: textOut,
      problems,
    };
  },
};
