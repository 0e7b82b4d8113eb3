/**
 * `syncmesh load FILE --node NODE`: readings into one node through its write API (`addSensors`,
 * with the mesh's write key), in batches, with progress. The readers are the function's own
 * (`@syncmesh-edge/syncmesh-fn/load`: the Sofia CSV format and JSON lines), so a file the node's
 * loader accepts is accepted here, with the same messages.
 *
 * The whole file is read and checked first: a bad line stops the load before anything is sent.
 * A failure half-way (the node went down) says how many readings were stored; `--skip N` loads
 * the rest (addSensors is not idempotent: loading the same readings again stores them twice).
 */
import { statSync } from 'node:fs';
import { EXIT } from '@syncmesh-edge/log/exit';
import type { VerbSpec } from '../args.js';
import { numberOption } from '../args.js';
import { postFunction, refusal } from '../client.js';
import type { Context, Verb } from '../context.js';
import { CliError } from '../errors.js';
import { findNode } from '../mesh-file.js';
import { ms, num, type VerbOutcome } from '../output.js';
import { readKeyFile } from '../signing.js';

export const FORMATS = ['csv', 'jsonl'] as const;
type Format = (typeof FORMATS)[number];

/** A progress line at most this often when stderr is not a terminal. */
const PROGRESS_EVERY_MS = 2_000;

const ADD_SENSORS = 'mutation($s: [SensorInput!]!) { addSensors(sensors: $s) }';

const spec: VerbSpec = {
  name: 'load',
  summary: 'Load readings (Sofia CSV or JSON lines) into one node through its write API, with progress',
  details: [
    'CSV: the Sofia columns sensor_id,location,lat,lon,timestamp,pressure,temperature,humidity (time',
    'without a zone is UTC). JSON lines: one object per line with those fields (lat, lon, timestamp',
    "required). The file is checked whole before the first reading is sent. Writes carry the mesh's",
    'write key (write_key_file). After a failure half-way, --skip N loads the rest.',
  ].join('\n'),
  options: {
    node: { type: 'string', value: 'NODE', description: 'the node to load into (id or position; required)', complete: 'node' },
    format: { type: 'string', value: 'FORMAT', description: 'the file format (default: from the extension: .csv, .jsonl/.ndjson)', complete: FORMATS },
    batch: { type: 'string', value: 'N', description: 'readings per request (1-10000, default 1000)' },
    skip: { type: 'string', value: 'N', description: 'leave out the first N readings (those a failed load stored)' },
  },
  positionals: [{ name: 'file', description: 'the readings', required: true, complete: 'file' }],
  examples: ['syncmesh load ../shared/data/sofia/1.csv --node node-1', 'syncmesh load readings.jsonl --node 2 --batch 500 --json'],
};

function formatOf(file: string, given: string | undefined): Format {
  if (given) return given as Format;
  if (/\.csv$/i.test(file)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(file)) return 'jsonl';
  throw new CliError('EDGE_CLI_USAGE', `syncmesh load: cannot tell the format of ${file} from its name`, { hint: 'give --format csv or --format jsonl' });
}

export const loadVerb: Verb = {
  spec,
  async run(ctx: Context, args): Promise<VerbOutcome> {
    const mesh = ctx.mesh();
    const file = args.positionals[0]!;
    if (typeof args.values['node'] !== 'string')
      throw new CliError('EDGE_CLI_USAGE', 'syncmesh load: --node NODE is required', { hint: 'syncmesh load --help' });
    const node = findNode(mesh, args.values['node']);
    const format = formatOf(file, args.values['format'] as string | undefined);
    const batchSize = numberOption('load', 'batch', args.values['batch'], { min: 1, max: 10_000, integer: true }) ?? 1000;
    const skip = numberOption('load', 'skip', args.values['skip'], { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }) ?? 0;
    try {
      if (!statSync(file).isFile()) throw new Error('not a file');
    } catch (err) {
      throw new CliError('EDGE_CLI_INPUT', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { hint: 'check the path' });
    }
    const writeKey = readKeyFile(mesh.write_key_file, 'write key');
    const { readSensorCsv, readSensorJsonLines, loadReadings } = await import('@syncmesh-edge/syncmesh-fn/load');
    const read = () => (format === 'csv' ? readSensorCsv(file) : readSensorJsonLines(file));

    // 1. the whole file, checked: a bad line changes nothing
    let total = 0;
    try {
      for await (const _ of read()) total++;
    } catch (err) {
      throw new CliError('EDGE_CLI_INPUT', `${file}: ${(err as Error).message}`, {
        hint:
          format === 'csv'
            ? 'fix the line, or see the Sofia format in syncmesh load --help'
            : 'fix the line: one JSON object per line, fields as in syncmesh load --help',
      });
    }
    if (skip > total)
      throw new CliError('EDGE_CLI_USAGE', `syncmesh load: --skip ${skip} is more than the ${total} readings of ${file}`, { hint: 'syncmesh load --help' });

    // 2. send, batch by batch
    const t0 = performance.now();
    let stored = 0;
    let lastShown = 0;
    const show = (done: boolean) => {
      const now = performance.now();
      if (!done && !process.stderr.isTTY && now - lastShown < PROGRESS_EVERY_MS) return;
      lastShown = now;
      const rate = stored / Math.max((now - t0) / 1000, 1e-3);
      const todo = total - skip;
      ctx.progress(
        `load ${file} -> ${node.id}: ${num(stored)} / ${num(todo)} readings (${todo ? Math.floor((stored * 100) / todo) : 100} %), ${num(rate)}/s`,
        done,
      );
    };
    async function* afterSkip() {
      let i = 0;
      for await (const r of read()) if (i++ >= skip) yield r;
    }
    await loadReadings(
      async (batch) => {
        const sensors = batch.map((r) => ({ ...r, timestamp: r.timestamp.toISOString() }));
        let res: Awaited<ReturnType<typeof postFunction>>;
        try {
          res = await postFunction(node, { query: ADD_SENSORS, variables: { s: sensors } }, { timeoutMs: ctx.timeoutMs, bearer: writeKey });
        } catch (err) {
          throw stoppedAt(err as CliError, stored, skip);
        }
        if (res.status !== 200 || (res.answer.errors?.length ?? 0) > 0)
          throw stoppedAt(refusal(node, res, `a batch of ${batch.length} readings`), stored, skip);
        stored += batch.length;
        show(false);
      },
      afterSkip(),
      { batchSize },
    );
    show(true);
    const elapsed = performance.now() - t0;
    return {
      code: EXIT.OK,
      result: {
        node: node.id,
        file,
        format,
        readings: total,
        skipped: skip,
        loaded: stored,
        batch: batchSize,
        ms: Math.round(elapsed),
        per_s: Math.round(stored / Math.max(elapsed / 1000, 1e-3)),
      },
      text: `loaded ${num(stored)} readings from ${file} into ${node.id} in ${ms(elapsed)}${skip ? ` (skipped the first ${num(skip)})` : ''}`,
    };
  },
};

/** The error of a batch, saying how far the load got and how to go on. */
function stoppedAt(err: CliError, stored: number, skip: number): CliError {
  const unsure =
    err.code === 'EDGE_CLI_UNREACHABLE' ? ' (the batch without an answer may have been stored too: syncmesh query stats --local shows the count)' : '';
  return new CliError(err.code, `${err.message}; ${num(stored)} readings were stored before this${unsure}`, {
    hint: `${err.hint ? `${err.hint}; then ` : ''}${skip + stored > 0 ? `load the rest with --skip ${skip + stored}` : 'load it again'}`,
    ...(err.remoteCode ? { remoteCode: err.remoteCode } : {}),
    cause: err,
  });
}
