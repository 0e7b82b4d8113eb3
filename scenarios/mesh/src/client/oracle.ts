/**
 * The expected mesh-wide aggregate, computed without the mesh: straight from the CSV files, or
 * (for generated data) straight from every node's MongoDB. Tests and the demo compare the mesh's
 * answer with it.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MongoClient } from 'mongodb';
import { MeshError } from '../errors.js';

export interface ExpectedAggregate {
  count: number;
  average_temperature: number | null;
  average_humidity: number | null;
  average_pressure: number | null;
}

interface Sums {
  count: number;
  t: [number, number];
  h: [number, number];
  p: [number, number];
}

const empty = (): Sums => ({ count: 0, t: [0, 0], h: [0, 0], p: [0, 0] });
const avg = ([sum, n]: [number, number]) => (n > 0 ? sum / n : null);

function finish(s: Sums): ExpectedAggregate {
  return { count: s.count, average_temperature: avg(s.t), average_humidity: avg(s.h), average_pressure: avg(s.p) };
}

function add(acc: [number, number], raw: string | undefined): void {
  const v = (raw ?? '').trim();
  if (v === '') return;
  acc[0] += Number(v);
  acc[1] += 1;
}

/** Timestamps without a zone are UTC (as the loader reads them). */
function parseUtc(ts: string): number {
  return Date.parse(/Z$|[+-]\d\d:?\d\d$/.test(ts) ? ts : `${ts}Z`);
}

/** count and averages over the CSV rows with start <= timestamp <= end. */
export async function expectedFromCsv(files: readonly string[], start: string, end: string): Promise<ExpectedAggregate> {
  const from = Date.parse(start);
  const to = Date.parse(end);
  const s = empty();
  for (const file of files) {
    const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
    let header: string[] | undefined;
    for await (const line of lines) {
      if (line.trim() === '') continue;
      const f = line.split(',');
      if (!header) {
        header = f.map((x) => x.trim());
        continue;
      }
      const col = (name: string) => f[header!.indexOf(name)];
      const ts = parseUtc((col('timestamp') ?? '').trim());
      if (!(ts >= from && ts <= to)) continue;
      s.count++;
      add(s.t, col('temperature'));
      add(s.h, col('humidity'));
      add(s.p, col('pressure'));
    }
  }
  return finish(s);
}

/** The same, read from each node's MongoDB (syncmesh.sensor_data) with a plain scan. */
export async function expectedFromMongo(uris: readonly string[], start: string, end: string): Promise<ExpectedAggregate> {
  const s = empty();
  for (const uri of uris) {
    const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 10_000 });
    try {
      const cursor = client
        .db('syncmesh')
        .collection('sensor_data')
        .find({ timestamp: { $gte: new Date(start), $lte: new Date(end) } }, { projection: { temperature: 1, humidity: 1, pressure: 1 } });
      for await (const d of cursor) {
        s.count++;
        for (const [acc, v] of [
          [s.t, d['temperature']],
          [s.h, d['humidity']],
          [s.p, d['pressure']],
        ] as const) {
          if (typeof v === 'number') {
            acc[0] += v;
            acc[1] += 1;
          }
        }
      }
    } catch (err) {
      throw new MeshError('EDGE_MESH_DATA', `cannot read the expected aggregate from ${uri}: ${(err as Error).message}`, { cause: err });
    } finally {
      await client.close();
    }
  }
  return finish(s);
}

/**
 * The expected aggregate of a mesh's nodes (1-based `nodes`, default all): from their CSV files
 * (`dataDir/<i>.csv`) when the mesh loaded them, else straight from their databases (`uris`,
 * node i at `uris[i - 1]`).
 */
export function expectedOf(
  source: { dataDir?: string | undefined; uris: readonly string[] },
  start: string,
  end: string,
  nodes?: readonly number[],
): Promise<ExpectedAggregate> {
  const which = nodes ?? source.uris.map((_, i) => i + 1);
  return source.dataDir
    ? expectedFromCsv(
        which.map((i) => join(source.dataDir!, `${i}.csv`)),
        start,
        end,
      )
    : expectedFromMongo(
        which.map((i) => source.uris[i - 1]!),
        start,
        end,
      );
}

/**
 * Runs a $match + $group over the window in one database (the shape of the function's aggregate)
 * and returns how long it took: a warm-up, not an oracle (expectedFromMongo reads the documents).
 * The first aggregation on a fresh test-server JVM compiles its pipeline code; under software
 * emulation that alone can take longer than a request's deadline.
 */
export async function warmAggregate(uri: string, start: string, end: string): Promise<number> {
  const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 10_000 });
  const t0 = performance.now();
  try {
    const group: Record<string, unknown> = { _id: null, count: { $sum: 1 } };
    for (const m of ['temperature', 'humidity', 'pressure']) {
      group[`${m}_n`] = { $sum: { $cond: [{ $gt: [`$${m}`, null] }, 1, 0] } };
      group[`${m}_sum`] = { $sum: `$${m}` };
      group[`${m}_min`] = { $min: `$${m}` };
      group[`${m}_max`] = { $max: `$${m}` };
    }
    await client
      .db('syncmesh')
      .collection('sensor_data')
      .aggregate([{ $match: { timestamp: { $gte: new Date(start), $lte: new Date(end) } } }, { $group: group }])
      .toArray();
    return Math.round(performance.now() - t0);
  } catch (err) {
    throw new MeshError('EDGE_MESH_DATA', `cannot run the warm-up aggregate on ${uri}: ${(err as Error).message}`, { cause: err });
  } finally {
    await client.close();
  }
}

/** Relative difference, 0 when both are equal (also both null). */
export function relDiff(a: number | null | undefined, b: number | null | undefined): number {
  if (a === b) return 0;
  if (a === null || a === undefined || b === null || b === undefined) return Infinity;
  return Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b), Number.MIN_VALUE);
}
