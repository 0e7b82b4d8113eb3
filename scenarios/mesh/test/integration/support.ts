/**
 * What the mesh integration tests (process, faasd, appliance) share: a mesh aggregate answer read
 * and compared with the oracle's value computed from the data.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TimedAnswer } from '../../src/client/client.js';
import { PACKAGE_ROOT, REPO_ROOT } from '../../src/config.js';
import { relDiff, type ExpectedAggregate } from '../../src/client/oracle.js';
import { type AgentClients, TOXIPROXY_BIN, until } from '../../src/testing/helpers.js';

/**
 * The environment of a 3-node test mesh (site latency) named `name`, its state in `stateRoot`,
 * with `extra` on top. Data: MESH_TEST_DATA, else ../shared/data/sofia next to the repository when
 * present, else generated.
 */
export function testMeshEnv(
  o: { name: string; stateRoot: string; nodeTimeoutMs: number; deadlineMs: number },
  extra: Record<string, string> = {},
): Record<string, string> {
  const sofia = process.env['MESH_TEST_DATA'] || join(REPO_ROOT, '..', 'shared', 'data', 'sofia');
  return {
    MESH_NAME: o.name,
    MESH_NODES: '3',
    MESH_STATE_DIR: o.stateRoot,
    MESH_LATENCY: 'site',
    ...(existsSync(join(sofia, '1.csv')) ? { MESH_DATA: sofia } : {}),
    MESH_NODE_TIMEOUT_MS: String(o.nodeTimeoutMs),
    MESH_DEADLINE_MS: String(o.deadlineMs),
    TOXIPROXY_BIN,
    ...extra,
  };
}

/** Poll budgets of the agent tests (agent-links, mdns): generous, the machine is shared and has 2 cores. */
export const AGENT_DEADLINES = {
  /** Every agent connected to every other: links up, or mDNS found them. */
  connectMs: 30_000,
  /** A write made on one node read on another. */
  replicationMs: 15_000,
} as const;

/** An agent-only 3-node mesh: the agent needs only its MongoDB; an echo server stands in for the function. */
export const AGENT_MESH_ENV: Readonly<Record<string, string>> = {
  MESH_NODES: '3',
  MESH_SERVICES: 'function,agent',
  MESH_FUNCTION_MAIN: join(PACKAGE_ROOT, 'dist', 'src', 'testing', 'echo-server.js'),
  MESH_MONGO_HEAP_MB: '64',
  TOXIPROXY_BIN,
};

/** Polls until every agent of `ids` lists exactly the others as connected peers; the milliseconds it took. */
export function untilAllConnected(clients: AgentClients, ids: readonly string[], what: string, deadlineMs: number): Promise<number> {
  return until(what, deadlineMs, async () => {
    for (const id of ids) {
      const got = await clients.connectedPeers(id);
      const want = ids.filter((x) => x !== id);
      if (JSON.stringify(got) !== JSON.stringify(want)) return `${id} sees [${got.join(',')}]`;
    }
    return true;
  });
}

const AVERAGES = ['average_temperature', 'average_humidity', 'average_pressure'] as const;

export type MeshAggregate = Record<'count' | (typeof AVERAGES)[number], number>;

/** The sensorsAggregate of an answer that has no GraphQL errors. */
export function aggregateOf(a: TimedAnswer): MeshAggregate {
  assert.deepEqual(a.answer.errors ?? [], [], 'no GraphQL errors');
  return a.answer.data!['sensorsAggregate'] as never;
}

/** The mesh's count equals the oracle's and its averages agree to 1e-9 (relative); `who` starts the messages. */
export function assertEqualAggregate(got: MeshAggregate, want: ExpectedAggregate, who = ''): void {
  const at = who ? `${who} ` : '';
  assert.equal(got.count, want.count, `${at}count`);
  for (const k of AVERAGES) {
    assert.ok(relDiff(got[k], want[k]) <= 1e-9, `${at}${k}: mesh ${got[k]} vs direct ${want[k]}`);
  }
}
