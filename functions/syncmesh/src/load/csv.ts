/**
 * Reads the Sofia CSV format (the dataset the Syncmesh paper used):
 *   sensor_id,location,lat,lon,timestamp,pressure,temperature,humidity
 * Timestamps without a zone are UTC. Bad rows raise an error naming the line and the column.
 */
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import { SyncmeshError } from '../errors.js';
import { parseDateTime } from '../graphql/datetime.js';
import type { StoredSensor } from '../data/sensors.js';

export const CSV_COLUMNS = ['sensor_id', 'location', 'lat', 'lon', 'timestamp', 'pressure', 'temperature', 'humidity'] as const;

function numberAt(row: Record<string, string>, col: string, line: number, integer: boolean): number | null {
  const raw = (row[col] ?? '').trim();
  if (raw === '') return null;
  const n = Number(raw);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', `line ${line}: ${col} '${raw}' is not ${integer ? 'an integer' : 'a number'}`);
  }
  return n;
}

/** Converts one CSV record; `line` is the 1-based line number for messages. */
export function rowToSensor(row: Record<string, string>, line: number): StoredSensor {
  let timestamp: Date;
  try {
    timestamp = parseDateTime((row['timestamp'] ?? '').trim());
  } catch (err) {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', `line ${line}: ${(err as Error).message}`, { cause: err });
  }
  const lat = numberAt(row, 'lat', line, false);
  const lon = numberAt(row, 'lon', line, false);
  if (lat === null || lon === null || lat < -90 || lat > 90 || lon < -180 || lon > 180) {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', `line ${line}: lat/lon must be numbers within -90..90 and -180..180`);
  }
  return {
    sensor_id: numberAt(row, 'sensor_id', line, true),
    location: numberAt(row, 'location', line, true),
    lat,
    lon,
    timestamp,
    pressure: numberAt(row, 'pressure', line, false),
    temperature: numberAt(row, 'temperature', line, false),
    humidity: numberAt(row, 'humidity', line, false),
  };
}

/** Streams the readings of a CSV file. */
export async function* readSensorCsv(path: string): AsyncGenerator<StoredSensor> {
  const parser = createReadStream(path).pipe(parse({ columns: true, skip_empty_lines: true, trim: true }));
  let line = 1; // the header
  for await (const record of parser as AsyncIterable<Record<string, string>>) {
    line++;
    if (line === 2) {
      const missing = CSV_COLUMNS.filter((c) => !(c in record));
      if (missing.length > 0) {
        throw new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', `${path}: missing column(s) ${missing.join(', ')}; expected ${CSV_COLUMNS.join(',')}`);
      }
    }
    yield rowToSensor(record, line);
  }
}
