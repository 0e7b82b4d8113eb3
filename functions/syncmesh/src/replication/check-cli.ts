#!/usr/bin/env node
/**
 * replication-check: does every subscriber of a mesh agree with its origin?
 *
 *   node functions/syncmesh/dist/src/replication/check-cli.js [--topology .mesh/topology.json] [--json] [--repair]
 *   make replication-check [MESH_NAME=sme0]
 *
 * Reads the nodes (id, function_url) and the mesh secret file from a topology (what `make
 * mesh-up` writes), asks every node to compare its readings with each subscriber's replicas per
 * time bucket, and prints one line per origin and subscriber. Exit 0: all agree; 1: some differ;
 * 2: a node could not be asked; 64: bad arguments or topology.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { checkReplication, DEFAULT_CHECK_TIMEOUT_MS, formatCheck } from './check.js';

const USAGE = 'usage: check-cli.js [--topology .mesh/topology.json] [--secret-file FILE] [--timeout-s 300] [--repair] [--json]';

const topologySchema = z.object({
  secret_file: z.string(),
  nodes: z.array(z.object({ id: z.string(), function_url: z.string() }).loose()).min(1),
});

function args() {
  return parseArgs({
    options: {
      topology: { type: 'string', default: '.mesh/topology.json' },
      'secret-file': { type: 'string' },
      'timeout-s': { type: 'string', default: String(DEFAULT_CHECK_TIMEOUT_MS / 1000) },
      repair: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  }).values;
}

async function main(): Promise<number> {
  let values: ReturnType<typeof args>;
  try {
    values = args();
  } catch (err) {
    console.error(`replication-check: ${(err as Error).message}\n${USAGE}`);
    return 64;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const timeoutS = Number(values['timeout-s']);
  if (!(timeoutS > 0)) {
    console.error(`replication-check: --timeout-s must be a positive number\n${USAGE}`);
    return 64;
  }
  let topology: z.infer<typeof topologySchema>;
  let secret: string;
  try {
    topology = topologySchema.parse(JSON.parse(readFileSync(values.topology!, 'utf8')));
    secret = readFileSync(values['secret-file'] ?? topology.secret_file, 'utf8').trim();
  } catch (err) {
    console.error(`replication-check: cannot use ${values.topology}: ${(err as Error).message}\n(start a mesh with make mesh-up, or give --topology)`);
    return 64;
  }
  const check = await checkReplication(
    topology.nodes.map((n) => ({ id: n.id, url: n.function_url })),
    { secret, timeoutMs: timeoutS * 1000, repair: values.repair },
  );
  console.log(values.json ? JSON.stringify(check, null, 2) : formatCheck(check));
  if (check.origins.some((o) => o.error || o.report?.subscribers.some((s) => s.error))) return 2;
  return check.agrees ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`replication-check: ${(err as Error).message}`);
    process.exitCode = 2;
  },
);
