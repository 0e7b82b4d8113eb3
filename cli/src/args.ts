/**
 * Verbs and their options, declared once: the parser (node:util parseArgs), `--help` and the
 * shell completion are all made from these declarations.
 */
import { parseArgs } from 'node:util';
import { CliError } from './errors.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** Shown in --help; for a string, `value` names its argument (FILE, N, ...). */
  description: string;
  value?: string;
  /** Completion: the values it takes, or 'node' (the mesh's node ids) or 'file'. */
  complete?: readonly string[] | 'node' | 'file';
}

export interface PositionalSpec {
  name: string;
  description: string;
  required?: boolean;
  /** Takes every remaining argument. */
  rest?: boolean;
  complete?: readonly string[] | 'node' | 'file';
}

export interface VerbSpec {
  name: string;
  summary: string;
  /** Paragraphs after the usage line. */
  details?: string;
  options: Record<string, OptionSpec>;
  positionals: readonly PositionalSpec[];
  examples?: readonly string[];
}

/** Options every verb takes. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  mesh: { type: 'string', value: 'FILE', description: 'the mesh description (default: $SYNCMESH_MESH, else .mesh/topology.json)', complete: 'file' },
  json: { type: 'boolean', description: 'print one JSON document on stdout (errors too), nothing else' },
  'timeout-ms': { type: 'string', value: 'N', description: 'how long one node may take to answer one request (default: $SYNCMESH_TIMEOUT_MS, else 5000)' },
  help: { type: 'boolean', short: 'h', description: 'this help' },
};

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** Parses a verb's arguments; a bad one is EDGE_CLI_USAGE naming it. */
export function parseVerb(spec: VerbSpec, argv: readonly string[]): Parsed {
  const options = { ...GLOBAL_OPTIONS, ...spec.options };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: Object.fromEntries(Object.entries(options).map(([k, o]) => [k, { type: o.type, ...(o.short ? { short: o.short } : {}) }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new CliError('EDGE_CLI_USAGE', `syncmesh ${spec.name}: ${(err as Error).message}`, { hint: `syncmesh ${spec.name} --help lists what it takes` });
  }
  const positionals = parsed.positionals;
  if (parsed.values['help']) return { values: parsed.values as Parsed['values'], positionals };
  const max = spec.positionals.some((p) => p.rest) ? Number.POSITIVE_INFINITY : spec.positionals.length;
  if (positionals.length > max) {
    throw new CliError('EDGE_CLI_USAGE', `syncmesh ${spec.name}: unexpected argument '${positionals[max]}'`, { hint: `syncmesh ${spec.name} --help` });
  }
  for (const [i, p] of spec.positionals.entries()) {
    const value = positionals[i];
    if (p.required && value === undefined) {
      throw new CliError('EDGE_CLI_USAGE', `syncmesh ${spec.name}: missing ${p.name.toUpperCase()} (${p.description})`, {
        hint: `syncmesh ${spec.name} --help`,
      });
    }
    if (value !== undefined && Array.isArray(p.complete) && !p.complete.includes(value)) {
      throw new CliError('EDGE_CLI_USAGE', `syncmesh ${spec.name}: ${p.name.toUpperCase()} must be one of ${p.complete.join(', ')}, not '${value}'`, {
        hint: `syncmesh ${spec.name} --help`,
      });
    }
  }
  for (const [k, o] of Object.entries(options)) {
    const v = parsed.values[k];
    if (typeof v === 'string' && Array.isArray(o.complete) && !o.complete.includes(v)) {
      throw new CliError('EDGE_CLI_USAGE', `syncmesh ${spec.name}: --${k} must be one of ${o.complete.join(', ')}, not '${v}'`, {
        hint: `syncmesh ${spec.name} --help`,
      });
    }
  }
  return { values: parsed.values as Parsed['values'], positionals };
}

/** A string option as a number in [min, max]; EDGE_CLI_USAGE otherwise. */
export function numberOption(
  verb: string,
  name: string,
  raw: string | boolean | undefined,
  range: { min: number; max: number; integer?: boolean },
): number | undefined {
  if (raw === undefined || typeof raw === 'boolean') return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < range.min || n > range.max || (range.integer && !Number.isInteger(n))) {
    throw new CliError(
      'EDGE_CLI_USAGE',
      `syncmesh ${verb}: --${name} must be ${range.integer ? 'a whole number' : 'a number'} from ${range.min} to ${range.max}, not '${raw}'`,
      {
        hint: `syncmesh ${verb} --help`,
      },
    );
  }
  return n;
}

function optionLine(name: string, o: OptionSpec): [string, string] {
  const values = Array.isArray(o.complete) ? ` (${o.complete.join(' | ')})` : '';
  return [`${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`, `${o.description}${values}`];
}

function columns(rows: Array<[string, string]>): string {
  const width = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `  ${a.padEnd(width)}  ${b}`).join('\n');
}

export function verbHelp(spec: VerbSpec): string {
  const pos = spec.positionals.map((p) => {
    const n = `${p.name.toUpperCase()}${p.rest ? '...' : ''}`;
    return p.required ? n : `[${n}]`;
  });
  const parts = [`usage: syncmesh ${spec.name}${pos.length ? ` ${pos.join(' ')}` : ''} [options]`, '', spec.summary];
  if (spec.details) parts.push('', spec.details);
  if (spec.positionals.length) {
    parts.push(
      '',
      'arguments:',
      columns(spec.positionals.map((p) => [p.name.toUpperCase(), `${p.description}${Array.isArray(p.complete) ? ` (${p.complete.join(' | ')})` : ''}`])),
    );
  }
  if (Object.keys(spec.options).length) parts.push('', 'options:', columns(Object.entries(spec.options).map(([k, o]) => optionLine(k, o))));
  parts.push('', 'every verb:', columns(Object.entries(GLOBAL_OPTIONS).map(([k, o]) => optionLine(k, o))));
  if (spec.examples?.length) parts.push('', 'examples:', ...spec.examples.map((e) => `  ${e}`));
  return `${parts.join('\n')}\n`;
}

export function mainHelp(verbs: readonly VerbSpec[]): string {
  return [
    'usage: syncmesh VERB [arguments] [options]',
    '',
    'The operator command line of a Syncmesh Edge mesh. It reads a mesh description (--mesh FILE,',
    '$SYNCMESH_MESH, else .mesh/topology.json), written by make mesh-up, make provision or make tf-up.',
    '',
    'verbs:',
    columns(verbs.map((v) => [v.name, v.summary])),
    '',
    'syncmesh VERB --help says more. Exit status: 0 done, 1 the mesh refused or did not answer,',
    '64 the command line is wrong, 78 the configuration is wrong (the environment, the mesh',
    'description, a secret); nothing was sent on 64 and 78. Error codes: docs/errors.md (EDGE_CLI_*).',
    '',
  ].join('\n');
}
