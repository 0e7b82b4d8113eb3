/**
 * The Prometheus text exposition format (version 0.0.4, what prom-client writes), read as flat
 * samples: one per line that is not a comment. A histogram's `_bucket`, `_sum` and `_count` lines
 * are samples of their own, which is what a reader of one value wants.
 *
 * Why not a package: the one on npm that parses this format (parse-prometheus-text-format 1.1.1)
 * drops the labels, sums and counts of labelled histograms, which every histogram here is.
 *
 *   metric_name [ "{" name "=" "value" { "," name "=" "value" } [ "," ] "}" ] value [ timestamp ]
 *
 * Label values escape `\\`, `\"` and `\n`; values are floats, `NaN`, `+Inf` or `-Inf` (in any case).
 */
import { CodedError } from '@syncmesh-edge/log/errors';

/** One series as it was exposed. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export class PrometheusParseError extends CodedError<'EDGE_PROMETHEUS_PARSE'> {
  override readonly name = 'PrometheusParseError';

  constructor(message: string, options?: ErrorOptions) {
    super('EDGE_PROMETHEUS_PARSE', message, options);
  }
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/** As Prometheus reads them (Go's ParseFloat): NaN and Inf in any case; prom-client writes `Nan`. */
function parseValue(raw: string, line: number): number {
  if (/^nan$/i.test(raw)) return Number.NaN;
  if (/^\+?inf(inity)?$/i.test(raw)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/i.test(raw)) return Number.NEGATIVE_INFINITY;
  const v = Number(raw);
  if (raw === '' || Number.isNaN(v)) throw new PrometheusParseError(`line ${line}: '${raw}' is not a sample value`);
  return v;
}

/** Parses the labels from `{` on; returns them and the index after `}`. */
function parseLabels(text: string, from: number, line: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = from + 1;
  const fail = (what: string): never => {
    throw new PrometheusParseError(`line ${line}: ${what} at column ${i + 1}`);
  };
  for (;;) {
    while (text[i] === ' ') i++;
    if (text[i] === '}') return { labels, end: i + 1 };
    const name = LABEL.exec(text.slice(i))?.[0] ?? fail('a label name expected');
    i += name.length;
    while (text[i] === ' ') i++;
    if (text[i] !== '=') fail("'=' expected");
    i++;
    while (text[i] === ' ') i++;
    if (text[i] !== '"') fail('a quoted label value expected');
    i++;
    let value = '';
    for (;;) {
      const c = text[i];
      if (c === undefined) fail('the label value is not closed');
      if (c === '"') break;
      if (c === '\\') {
        const n = text[i + 1];
        value += n === 'n' ? '\n' : n === '"' ? '"' : n === '\\' ? '\\' : fail(`unknown escape \\${n ?? ''}`);
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    i++;
    labels[name] = value;
    while (text[i] === ' ') i++;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') fail("',' or '}' expected");
  }
}

/** Every sample of an exposition; throws PrometheusParseError naming the line of anything else. */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const name = NAME.exec(line)?.[0];
    if (!name) throw new PrometheusParseError(`line ${n + 1}: a metric name expected`);
    let labels: Record<string, string> = {};
    let rest = line.slice(name.length);
    if (rest.startsWith('{')) {
      const parsed = parseLabels(line, name.length, n + 1);
      labels = parsed.labels;
      rest = line.slice(parsed.end);
    }
    const [value = '', timestamp] = rest.trim().split(/\s+/);
    if (timestamp !== undefined && !/^-?\d+$/.test(timestamp)) throw new PrometheusParseError(`line ${n + 1}: '${timestamp}' is not a timestamp`);
    out.push({ name, labels, value: parseValue(value, n + 1) });
  }
  return out;
}

/** The samples of `name` whose labels include every one of `labels`. */
export function selectSamples(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/**
 * The value of the one series of `name` whose labels include `labels`: 0 when there is none (a
 * counter not yet incremented); throws when several match (name more labels).
 */
export function metricValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const hits = selectSamples(samples, name, labels);
  if (hits.length > 1) throw new Error(`${hits.length} series of ${name} match ${JSON.stringify(labels)}: name more labels`);
  return hits[0]?.value ?? 0;
}
