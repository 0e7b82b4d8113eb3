/**
 * Listener maintenance commands. They read the listener's own environment (src/config.ts):
 * MONGODB_URI, LISTENER_META_DATABASE, SYNCMESH_FUNCTION_URL, the mesh secret, the node ids.
 *
 *   node listeners/dist/src/cli.js dead-letters [--ns db.coll] [--all]
 *   node listeners/dist/src/cli.js replay [--ns db.coll] [--id <letter id>] [--all] [--dry-run] [--no-resync]
 *
 * Output is one JSON document on stdout. Exit codes (lib/log's EXIT): 0 done, 1 a letter was not
 * delivered, 64 bad arguments, 78 configuration.
 */
import { parseArgs } from 'node:util';
import { EXIT } from '@syncmesh-edge/log/service';
import { MongoClient, ObjectId } from 'mongodb';
import { loadConfig, type ListenerConfig } from './config.js';
import { createFunctionClient } from './delivery.js';
import { ListenerError } from './errors.js';
import { replayDeadLetters } from './replay.js';

const USAGE = `usage:
  cli.js dead-letters [--ns db.coll] [--all]          list dead letters not replayed yet (--all: every one)
  cli.js replay [--ns db.coll] [--id <letter id>] [--all] [--dry-run] [--no-resync]
                                                      re-deliver them, oldest first, then resync their namespaces`;

const PARSE_CONFIG = {
  allowPositionals: true,
  options: {
    ns: { type: 'string' },
    id: { type: 'string' },
    all: { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    'no-resync': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
} as const;

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<typeof PARSE_CONFIG>>;
  try {
    parsed = parseArgs({ ...PARSE_CONFIG, args: argv });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return EXIT.USAGE;
  }
  const [command] = parsed.positionals;
  const o = parsed.values;
  if (o.help || (command !== 'replay' && command !== 'dead-letters')) {
    process.stderr.write(`${USAGE}\n`);
    return o.help ? 0 : EXIT.USAGE;
  }
  if (o.id !== undefined && !ObjectId.isValid(o.id)) {
    process.stderr.write(`--id '${o.id}' is not a letter id (24 hex digits, as listed by dead-letters)\n`);
    return EXIT.USAGE;
  }
  let config: ListenerConfig;
  try {
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`${err instanceof ListenerError ? `${err.code}: ` : ''}${(err as Error).message}\n`);
    return EXIT.CONFIG;
  }
  const client = new MongoClient(config.mongoUri, { appName: `syncmesh-listener-cli-${config.nodeId}`, serverSelectionTimeoutMS: 10_000 });
  try {
    await client.connect();
    const meta = client.db(config.metaDatabase);
    const functionClient = createFunctionClient({
      functionUrl: config.functionUrl,
      meshSecret: config.meshSecret,
      nodeId: config.nodeId,
      functionNodeId: config.functionNodeId,
      timeoutMs: config.deliveryTimeoutMs,
    });
    const summary = await replayDeadLetters(meta, functionClient, {
      ns: o.ns,
      id: o.id === undefined ? undefined : new ObjectId(o.id),
      all: o.all,
      dryRun: command === 'dead-letters' || o['dry-run'],
      noResync: o['no-resync'],
    });
    process.stdout.write(`${JSON.stringify(command === 'dead-letters' ? { letters: summary.letters.map(({ outcome: _o, ...l }) => l) } : summary, null, 2)}\n`);
    return summary.ok ? 0 : 1;
  } finally {
    await client.close();
  }
}

process.exit(await main(process.argv.slice(2)));
