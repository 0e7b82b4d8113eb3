/**
 * The original Syncmesh client's bodies against a running mesh (process or faasd runtime): every
 * node's registry holds its peers at the `function_url`s `mesh-up` prints, and a body naming
 * those URLs in `external_nodes` is answered exactly through every node. Shared by the mesh's
 * end-to-end test and the faasd tier.
 */
import assert from 'node:assert/strict';
import { listNodes, postFunction, type TimedAnswer } from '../client/client.js';
import { relDiff, type ExpectedAggregate } from '../client/oracle.js';
import { DAY_END, MONTH_END, MONTH_START, originalRequest } from '../client/queries.js';
import type { Topology } from '../plan/topology.js';

type Averages = Pick<ExpectedAggregate, 'average_temperature' | 'average_humidity' | 'average_pressure'>;

function assertAverages(got: Record<string, unknown>, want: Averages, names: Record<keyof Averages, string>, what: string): void {
  for (const k of ['average_temperature', 'average_humidity', 'average_pressure'] as const) {
    const v = got[names[k]] as number | null;
    assert.ok(relDiff(v, want[k]) <= 1e-9, `${what} ${names[k]}: mesh ${v} vs direct ${want[k]}`);
  }
}

function assertEveryPeerAnswered(a: TimedAnswer, entry: string, peers: readonly string[], what: string): void {
  assert.equal(a.status, 200, `${what} via ${entry}: HTTP ${a.status} ${JSON.stringify(a.answer.errors ?? a.answer)}`);
  assert.deepEqual(a.answer.errors ?? [], [], `${what} via ${entry}: no errors`);
  const ok = (a.answer.extensions?.nodes ?? []).filter((n) => n.status === 'ok').map((n) => n.node);
  assert.deepEqual(ok.sort(), [...peers].sort(), `${what} via ${entry}: every named peer answered (${JSON.stringify(a.answer.extensions?.nodes)})`);
  assert.equal(a.answer.extensions?.partial, false, `${what} via ${entry}: not partial`);
}

/**
 * Asserts the original bodies through every node; `expected(start, end)` is the mesh-wide truth
 * over every node's data (from the CSV files or straight from the databases). Returns what was
 * measured, one line per entry node.
 */
export async function assertOriginalBodiesExact(
  topology: Topology,
  secret: string,
  expected: (start: string, end: string) => Promise<ExpectedAggregate>,
  timeoutMs: number,
): Promise<string[]> {
  const month = await expected(MONTH_START, MONTH_END);
  const day = await expected(MONTH_START, DAY_END);
  const lines: string[] = [];
  for (const entry of topology.nodes) {
    const others = topology.nodes.filter((n) => n !== entry);
    // the registry names every peer by the URL mesh-up printed for it
    const registry = await listNodes(entry.function_url, secret);
    for (const o of others) {
      assert.equal(registry.find((r) => r.id === o.id)?.address, o.function_url, `${entry.id}'s registry holds ${o.id} at its function_url`);
    }
    const urls = others.map((n) => n.function_url);
    const ids = others.map((n) => n.id);

    const agg = await postFunction(
      entry.function_url,
      originalRequest(
        `{ sensorsAggregate(start_time: "${MONTH_START}", end_time: "${MONTH_END}") { count average_temperature average_humidity average_pressure } }`,
        'aggregate',
        urls,
      ),
      { timeoutMs },
    );
    assertEveryPeerAnswered(agg, entry.id, ids, 'sensorsAggregate');
    const got = agg.answer.data!['sensorsAggregate'] as Record<string, unknown>;
    assert.equal(got['count'], month.count, `sensorsAggregate via ${entry.id}: count`);
    assertAverages(
      got,
      month,
      { average_temperature: 'average_temperature', average_humidity: 'average_humidity', average_pressure: 'average_pressure' },
      `via ${entry.id}`,
    );

    // the paper's benchmark body: a sensors selection with request_type aggregate is one element of mesh-wide averages
    const bench = await postFunction(
      entry.function_url,
      originalRequest(`{sensors(start_time: "${MONTH_START}", end_time: "${MONTH_END}"){temperature humidity pressure}}`, 'aggregate', urls),
      { timeoutMs },
    );
    assertEveryPeerAnswered(bench, entry.id, ids, 'benchmark aggregate');
    const rows = bench.answer.data!['sensors'] as Record<string, unknown>[];
    assert.equal(rows.length, 1, `benchmark aggregate via ${entry.id}: one element`);
    assertAverages(
      rows[0]!,
      month,
      { average_temperature: 'temperature', average_humidity: 'humidity', average_pressure: 'pressure' },
      `benchmark aggregate via ${entry.id}`,
    );

    const collect = await postFunction(
      entry.function_url,
      originalRequest(`{sensors(start_time: "${MONTH_START}", end_time: "${DAY_END}"){_id timestamp temperature}}`, 'collect', urls),
      { timeoutMs },
    );
    assertEveryPeerAnswered(collect, entry.id, ids, 'collect');
    const readings = collect.answer.data!['sensors'] as { _id: string }[];
    assert.equal(readings.length, day.count, `collect via ${entry.id}: every reading of the day`);
    assert.equal(new Set(readings.map((r) => String(r._id))).size, readings.length, `collect via ${entry.id}: no reading twice`);
    lines.push(
      `${entry.id} with external_nodes ${ids.join(', ')}: aggregate count ${got['count']} in ${Math.round(agg.rttMs)} ms, benchmark body in ${Math.round(bench.rttMs)} ms, collect ${readings.length} readings in ${Math.round(collect.rttMs)} ms`,
    );
  }
  return lines;
}
