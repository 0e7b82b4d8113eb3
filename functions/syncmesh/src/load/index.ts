/**
 * What other components reuse of the loader (`@syncmesh-edge/syncmesh-fn/load`): the readers of
 * the Sofia CSV format and of JSON lines, the deterministic generator, and the batching. The syncmesh CLI loads through a
 * node's write API with them (cli/src/commands/load.ts); load/cli.ts writes to MongoDB directly.
 */
export { CSV_COLUMNS, readSensorCsv, rowToSensor } from './csv.js';
export { jsonToSensor, readSensorJsonLines } from './jsonl.js';
export { generatedLocation, generateSensorData } from './generate.js';
export type { GenerateOptions } from './generate.js';
export { DEFAULT_BATCH_SIZE, loadReadings } from './loader.js';
export type { BatchSink, LoadResult } from './loader.js';
export type { StoredSensor } from '../data/sensors.js';
