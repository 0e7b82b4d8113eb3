/**
 * Mergeable partial answers. Every node answers a forwarded query with partials computed in its
 * own database; the node that received the client's query merges them. Merging is exact:
 * counts and sums add, minima and maxima combine, and averages are computed only at the end
 * from the merged sum and count (never as an average of averages).
 */

export const METRICS = ['temperature', 'humidity', 'pressure'] as const;
export type Metric = (typeof METRICS)[number];

/** A reading as it travels between nodes: plain JSON, timestamp as ISO-8601 UTC, _id as string. */
export interface SensorDoc {
  _id: string;
  sensor_id?: number | null;
  location?: number | null;
  lat?: number | null;
  lon?: number | null;
  timestamp?: string | null;
  temperature?: number | null;
  humidity?: number | null;
  pressure?: number | null;
}

/** Statistics of one metric over the readings that have a value for it. */
export interface MetricStats {
  n: number;
  sum: number;
  min: number | null;
  max: number | null;
}

export interface AggregatePartial {
  kind: 'aggregate';
  /** Matching readings. */
  count: number;
  metrics: Record<Metric, MetricStats>;
}

export interface DocsPartial {
  kind: 'docs';
  /** Sorted by (timestamp, _id); at most `limit` when a limit is set. */
  docs: SensorDoc[];
}

export interface DocPartial {
  kind: 'doc';
  doc: SensorDoc | null;
}

export interface CountPartial {
  kind: 'count';
  n: number;
}

export type PartialAnswer = AggregatePartial | DocsPartial | DocPartial | CountPartial;

/** The statistics a query needs per metric; nodes compute only these in their database. */
export type Stat = 'n' | 'sum' | 'min' | 'max';
export type AggregateNeeds = Record<Metric, ReadonlySet<Stat>>;

const EVERY_STAT: ReadonlySet<Stat> = new Set<Stat>(['n', 'sum', 'min', 'max']);
export const ALL_STATS: AggregateNeeds = { temperature: EVERY_STAT, humidity: EVERY_STAT, pressure: EVERY_STAT };

/**
 * The statistics behind the selected `SensorAggregate` fields: an average needs n and sum, a
 * sum its sum, min and max themselves. Statistics that were not computed stay at their empty
 * value (0 or null), which merges as a no-op, so a partial that holds more than this (from
 * another node) still merges exactly for the fields that were asked.
 */
export function statsFor(fields: Iterable<string>): AggregateNeeds {
  const needs: Record<Metric, Set<Stat>> = { temperature: new Set(), humidity: new Set(), pressure: new Set() };
  for (const f of fields) {
    const m = /^(average|sum|min|max)_(temperature|humidity|pressure)$/.exec(f);
    if (!m) continue;
    const set = needs[m[2] as Metric];
    if (m[1] === 'average') set.add('n').add('sum');
    else set.add(m[1] as Stat);
  }
  return needs;
}

export function emptyMetric(): MetricStats {
  return { n: 0, sum: 0, min: null, max: null };
}

export function emptyAggregate(): AggregatePartial {
  return { kind: 'aggregate', count: 0, metrics: { temperature: emptyMetric(), humidity: emptyMetric(), pressure: emptyMetric() } };
}

function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

function maxOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

export function mergeMetric(a: MetricStats, b: MetricStats): MetricStats {
  return { n: a.n + b.n, sum: a.sum + b.sum, min: minOf(a.min, b.min), max: maxOf(a.max, b.max) };
}

export function mergeAggregate(a: AggregatePartial, b: AggregatePartial): AggregatePartial {
  return {
    kind: 'aggregate',
    count: a.count + b.count,
    metrics: {
      temperature: mergeMetric(a.metrics.temperature, b.metrics.temperature),
      humidity: mergeMetric(a.metrics.humidity, b.metrics.humidity),
      pressure: mergeMetric(a.metrics.pressure, b.metrics.pressure),
    },
  };
}

/** The order of readings everywhere: by timestamp, then _id, so that `limit` is deterministic. */
export function compareDocs(a: SensorDoc, b: SensorDoc): number {
  const ta = a.timestamp ?? '';
  const tb = b.timestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
}

/** Merges two sorted lists, keeping at most `limit` (null: all). Readings with the same _id are kept once. */
export function mergeDocs(a: readonly SensorDoc[], b: readonly SensorDoc[], limit: number | null): SensorDoc[] {
  const out: SensorDoc[] = [];
  const max = limit ?? Number.POSITIVE_INFINITY;
  let i = 0;
  let j = 0;
  while (out.length < max && (i < a.length || j < b.length)) {
    let next: SensorDoc;
    if (j >= b.length || (i < a.length && compareDocs(a[i]!, b[j]!) <= 0)) next = a[i++]!;
    else next = b[j++]!;
    const last = out[out.length - 1];
    if (last === undefined || last._id !== next._id || last.timestamp !== next.timestamp) out.push(next);
  }
  return out;
}

/**
 * Merges two partials of the same field. A partial of another kind means a node answered a
 * different query: that is a bug, so it throws.
 */
export function mergePartials(a: PartialAnswer, b: PartialAnswer, limit: number | null = null): PartialAnswer {
  if (a.kind !== b.kind) throw new Error(`cannot merge a '${a.kind}' partial with a '${b.kind}' partial`);
  switch (a.kind) {
    case 'aggregate':
      return mergeAggregate(a, b as AggregatePartial);
    case 'docs':
      return { kind: 'docs', docs: mergeDocs(a.docs, (b as DocsPartial).docs, limit) };
    case 'doc':
      return { kind: 'doc', doc: a.doc ?? (b as DocPartial).doc };
    case 'count':
      return { kind: 'count', n: a.n + (b as CountPartial).n };
  }
}

/** The `SensorAggregate` GraphQL object computed from merged statistics. */
export interface AggregateResult {
  count: number;
  average_temperature: number | null;
  average_humidity: number | null;
  average_pressure: number | null;
  min_temperature: number | null;
  min_humidity: number | null;
  min_pressure: number | null;
  max_temperature: number | null;
  max_humidity: number | null;
  max_pressure: number | null;
  sum_temperature: number;
  sum_humidity: number;
  sum_pressure: number;
}

export function average(m: MetricStats): number | null {
  return m.n === 0 ? null : m.sum / m.n;
}

export function finishAggregate(p: AggregatePartial): AggregateResult {
  const { temperature: t, humidity: h, pressure: pr } = p.metrics;
  return {
    count: p.count,
    average_temperature: average(t),
    average_humidity: average(h),
    average_pressure: average(pr),
    min_temperature: t.min,
    min_humidity: h.min,
    min_pressure: pr.min,
    max_temperature: t.max,
    max_humidity: h.max,
    max_pressure: pr.max,
    sum_temperature: t.sum,
    sum_humidity: h.sum,
    sum_pressure: pr.sum,
  };
}
