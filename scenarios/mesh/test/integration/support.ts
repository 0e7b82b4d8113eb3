/**
 * What the mesh integration tests (process, faasd, appliance) share: a mesh aggregate answer read
 * and compared with the oracle's value computed from the data.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TimedAnswer } from '../../src/client.js';
import { REPO_ROOT } from '../../src/config.js';
import { relDiff, type ExpectedAggregate } from '../../src/oracle.js';
import { TOXIPROXY_BIN } from '../../src/testing/helpers.js';

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
