/** Streams readings into a node's collection in batches. */
import type { StoredSensor } from '../data/sensors.js';

export const DEFAULT_BATCH_SIZE = 1000;

export interface LoadResult {
  count: number;
  /** Location of the first reading (used to place the own node). */
  first: { lat: number; lon: number } | null;
}

/** Writes one batch (e.g. an insertMany); resolves when it is stored. */
export type BatchSink = (batch: StoredSensor[]) => Promise<unknown>;

export async function loadReadings(
  sink: BatchSink,
  source: Iterable<StoredSensor> | AsyncIterable<StoredSensor>,
  opts: { batchSize?: number; onBatch?: (loaded: number) => void } = {},
): Promise<LoadResult> {
  const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  let batch: StoredSensor[] = [];
  let count = 0;
  let first: LoadResult['first'] = null;
  const flush = async () => {
    if (batch.length === 0) return;
    await sink(batch);
    count += batch.length;
    batch = [];
    opts.onBatch?.(count);
  };
  for await (const reading of source) {
    if (first === null && typeof reading.lat === 'number' && typeof reading.lon === 'number') first = { lat: reading.lat, lon: reading.lon };
    batch.push(reading);
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  return { count, first };
}
