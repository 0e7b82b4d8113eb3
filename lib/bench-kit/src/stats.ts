/**
 * The one percentile definition of every benchmark: **nearest rank**. For n samples sorted
 * ascending, the p-th percentile (0 < p <= 100) is the sample at rank ceil(p / 100 * n)
 * (1-based); p = 0 gives the smallest sample. It is always a value that was measured, never an
 * interpolation, so p100 is the maximum and p50 of an even count is the lower middle sample.
 */

/** Nearest-rank percentile of `samples` (any order; not modified). NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be between 0 and 100, got ${p}`);
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return percentileOfSorted(sorted, p);
}

/** The same on samples already sorted ascending (no copy, no sort). */
export function percentileOfSorted(sorted: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be between 0 and 100, got ${p}`);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

export interface Summary {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** The arithmetic mean (NaN when empty). */
export function mean(samples: readonly number[]): number {
  return samples.length === 0 ? Number.NaN : samples.reduce((a, b) => a + b, 0) / samples.length;
}

/** count, min, nearest-rank p50/p90/p99, max and mean of `samples` (NaN fields when empty). */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  return {
    count: n,
    min: n === 0 ? Number.NaN : (sorted[0] as number),
    p50: percentileOfSorted(sorted, 50),
    p90: percentileOfSorted(sorted, 90),
    p99: percentileOfSorted(sorted, 99),
    max: n === 0 ? Number.NaN : (sorted[n - 1] as number),
    mean: mean(sorted),
  };
}
