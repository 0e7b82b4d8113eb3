/**
 * Readings as JSON lines: one object per line with the Sofia columns as fields
 * (`{"sensor_id": 1, "lat": 42.6, "lon": 23.3, "timestamp": "2017-07-01T00:00:00Z", "temperature": 21.5}`).
 * `lat`, `lon` and `timestamp` are required, the others may be absent or null. Each line is
 * checked by the CSV reader's own row check (rowToSensor), so both formats accept the same values;
 * an unknown field is refused (a typo would otherwise drop a value silently).
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { SyncmeshError } from '../errors.js';
import type { StoredSensor } from '../data/sensors.js';
import { CSV_COLUMNS, rowToSensor } from './csv.js';

const FIELDS: ReadonlySet<string> = new Set(CSV_COLUMNS);

/** Converts one JSON line; `line` is the 1-based line number for messages. */
export function jsonToSensor(text: string, line: number): StoredSensor {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', `line ${line}: not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', `line ${line}: a JSON object with the fields ${CSV_COLUMNS.join(', ')} expected`);
  }
  const row: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!FIELDS.has(k)) throw new SyncmeshError('EDGE_SYNCMESH_BAD_ARGUMENT', `line ${line}: unknown field '${k}'; allowed: ${CSV_COLUMNS.join(', ')}`);
    if (v !== null && typeof v !== 'number' && typeof v !== 'string') {
      throw new SyncmeshError(
        'EDGE_SYNCMESH_BAD_ARGUMENT',
        `line ${line}: ${k} must be a number${k === 'timestamp' ? ' or a string' : ''}, not ${JSON.stringify(v)}`,
      );
    }
    row[k] = v === null ? '' : String(v);
  }
  return rowToSensor(row, line);
}

/** Streams the readings of a JSON-lines file (blank lines are skipped). */
export async function* readSensorJsonLines(path: string): AsyncGenerator<StoredSensor> {
  let line = 0;
  for await (const text of createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY })) {
    line++;
    if (text.trim() === '') continue;
    yield jsonToSensor(text, line);
  }
}
