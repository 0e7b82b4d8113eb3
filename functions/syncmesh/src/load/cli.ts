#!/usr/bin/env node
/**
 * syncmesh-load: loads sensor readings into a node's MongoDB.
 *
 *   syncmesh-load --mongodb-uri URI --file ../shared/data/sofia/1.csv
 *   syncmesh-load --mongodb-uri URI --generate --sensor 1 [--days 31]
 *   ... [--set-own-location --node-id node-1 --address http://10.0.0.2:8080/function/syncmesh-fn]
 *
 * Prints the number of readings loaded. With --set-own-location the registry's own node is
 * created (or moved) to the first reading's coordinates.
 */
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import { DEFAULT_MONGODB_URI } from '../config.js';
import { SensorStore } from '../data/sensors.js';
import { NodeRegistry } from '../mesh/registry.js';
import { readSensorCsv } from './csv.js';
import { generateSensorData } from './generate.js';
import { DEFAULT_BATCH_SIZE, loadReadings } from './loader.js';

const USAGE = `usage: syncmesh-load [--mongodb-uri URI] (--file X.csv | --generate --sensor N [--days D])
                     [--database syncmesh] [--collection sensor_data] [--batch-size 1000] [--drop]
                     [--set-own-location --node-id ID --address URL] [--quiet]`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      'mongodb-uri': { type: 'string', default: process.env['MONGODB_URI'] ?? DEFAULT_MONGODB_URI },
      file: { type: 'string' },
      generate: { type: 'boolean', default: false },
      sensor: { type: 'string', default: '1' },
      days: { type: 'string', default: '31' },
      database: { type: 'string', default: 'syncmesh' },
      collection: { type: 'string', default: 'sensor_data' },
      'batch-size': { type: 'string', default: String(DEFAULT_BATCH_SIZE) },
      drop: { type: 'boolean', default: false },
      'set-own-location': { type: 'boolean', default: false },
      'node-id': { type: 'string' },
      address: { type: 'string' },
      'meta-database': { type: 'string', default: 'syncmesh_meta' },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.file === !values.generate) {
    console.error(`syncmesh-load: give exactly one of --file or --generate\n${USAGE}`);
    return 2;
  }
  const sensor = Number(values.sensor);
  const days = Number(values.days);
  const batchSize = Number(values['batch-size']);
  if (!Number.isInteger(sensor) || sensor < 1 || !(days > 0) || !Number.isInteger(batchSize) || batchSize < 1) {
    console.error(`syncmesh-load: --sensor and --batch-size must be positive integers, --days a positive number\n${USAGE}`);
    return 2;
  }
  if (values['set-own-location'] && (!values['node-id'] || !values.address)) {
    console.error(`syncmesh-load: --set-own-location needs --node-id and --address\n${USAGE}`);
    return 2;
  }

  const client = await MongoClient.connect(values['mongodb-uri']!, { serverSelectionTimeoutMS: 10_000 });
  try {
    const store = new SensorStore(client.db(values.database!), values.collection!);
    if (values.drop) await store.collection.deleteMany({});
    await store.ensureIndexes();
    const source = values.file ? readSensorCsv(values.file) : generateSensorData(sensor, { days });
    const started = Date.now();
    const { count, first } = await loadReadings((batch) => store.insert(batch), source, {
      batchSize,
      onBatch: (n) => {
        if (!values.quiet && process.stderr.isTTY) process.stderr.write(`\rloaded ${n} readings`);
      },
    });
    if (!values.quiet && process.stderr.isTTY) process.stderr.write('\n');
    if (values['set-own-location']) {
      if (!first) throw new Error('no reading with a location, cannot place the own node');
      const registry = new NodeRegistry(client.db(values['meta-database']!));
      const id = values['node-id']!;
      const current = await registry.get(id);
      const node = current
        ? await registry.update(id, { address: values.address!, lat: first.lat, lon: first.lon, own_node: true })
        : await registry.add({ id, address: values.address!, lat: first.lat, lon: first.lon, own_node: true, subscribed: false });
      if (!values.quiet) console.error(`own node ${node.id} at ${node.lat}, ${node.lon}`);
    }
    console.log(JSON.stringify({ loaded: count, database: values.database, collection: values.collection, ms: Date.now() - started }));
    return 0;
  } finally {
    await client.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`syncmesh-load: ${(err as Error).message}`);
    process.exit(1);
  },
);
