import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  canonicalFields,
  countFaults,
  CrdtModel,
  planFaults,
  planOutage,
  Prng,
  queryStats,
  verifyCrdts,
  verifyData,
  type Fault,
  type HeldReading,
  type WriteRecord,
} from './chaos.js';

const SEEDS = [0, 1, 7, 42, 1234, 99999, 2 ** 31 - 1];

test('chaos prng - the same seed gives the same stream; forks are independent of each other', () => {
  const a = new Prng(42);
  const b = new Prng(42);
  const xs = Array.from({ length: 100 }, () => a.next());
  assert.deepEqual(
    xs,
    Array.from({ length: 100 }, () => b.next()),
  );
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.notDeepEqual(new Prng(42).fork('writer').next(), new Prng(42).fork('reader').next());
  assert.equal(new Prng(42).fork('writer').next(), new Prng(42).fork('writer').next());
  const r = new Prng(3);
  for (let i = 0; i < 1000; i++) {
    const n = r.int(2, 5);
    assert.ok(n >= 2 && n <= 5 && Number.isInteger(n));
  }
  assert.equal(new Prng(1).weighted({ a: 0, b: 1 }), 'b');
});

test('chaos plan - a plan is a function of its seed and options only', () => {
  for (const seed of SEEDS) {
    const opts = { seed, nodes: 5, durationMs: 60_000 };
    assert.deepEqual(planFaults(opts), planFaults(opts));
  }
  assert.notDeepEqual(planFaults({ seed: 1, nodes: 5, durationMs: 60_000 }), planFaults({ seed: 2, nodes: 5, durationMs: 60_000 }));
});

function overlaps(a: Fault, b: Fault, settleMs: number): boolean {
  return a.atMs < b.atMs + b.holdMs + settleMs && b.atMs < a.atMs + a.holdMs + settleMs;
}

test('chaos plan - faults are bounded: healed by the end, one per node at a time, limited partitions and concurrency', () => {
  const settleMs = 2_000;
  for (const seed of SEEDS) {
    for (const durationMs of [25_000, 300_000]) {
      const faults = planFaults({ seed, nodes: 5, durationMs, settleMs, maxPartitioned: 2, maxConcurrent: 3 });
      assert.ok(faults.length > 0, `seed ${seed}: no faults in ${durationMs} ms`);
      for (const f of faults) {
        assert.ok(f.atMs >= 1_000 && f.atMs + f.holdMs <= durationMs, `fault ${f.seq} of seed ${seed} ends after the chaos phase`);
        assert.ok(f.node >= 1 && f.node <= 5);
        assert.equal(f.kind === 'kill', f.role !== undefined);
      }
      for (const f of faults) {
        const together = faults.filter((g) => g.atMs <= f.atMs && f.atMs < g.atMs + g.holdMs + settleMs);
        assert.ok(together.length <= 3, `seed ${seed}: ${together.length} faults active at ${f.atMs} ms`);
        assert.ok(together.filter((g) => g.kind === 'partition').length <= 2);
        for (const g of faults)
          if (g !== f && g.node === f.node) assert.ok(!overlaps(f, g, settleMs), `seed ${seed}: faults ${f.seq} and ${g.seq} overlap on node-${f.node}`);
      }
    }
  }
});

test('chaos plan - a long plan reaches every kind, every killable role and every node', () => {
  const faults = planFaults({ seed: 5, nodes: 5, durationMs: 600_000 });
  const kinds = countFaults(faults);
  for (const k of ['kill:function', 'kill:listener', 'kill:agent', 'partition', 'db-restart', 'db-kill', 'db-freeze'])
    assert.ok((kinds[k] ?? 0) > 0, `no ${k} in ${JSON.stringify(kinds)}`);
  assert.equal(kinds['outage'], undefined, 'an outage is never drawn, only placed');
  assert.deepEqual([...new Set(faults.map((f) => f.node))].sort(), [1, 2, 3, 4, 5]);
  assert.deepEqual(
    countFaults(planFaults({ seed: 5, nodes: 5, durationMs: 600_000, weights: { partition: 0, 'db-restart': 0, 'db-freeze': 0 } })).partition,
    undefined,
  );
});

test('chaos plan - the outage is placed once, from the seed; the drawn faults keep clear of its node while it lasts', () => {
  const settleMs = 2_000;
  for (const seed of SEEDS) {
    const outage = planOutage(seed, 5, 60_000, 20_000);
    assert.deepEqual(outage, planOutage(seed, 5, 60_000, 20_000));
    assert.equal(outage.atMs, 12_000);
    const faults = planFaults({ seed, nodes: 5, durationMs: 60_000, settleMs, reserved: [outage] });
    const placed = faults.filter((f) => f.kind === 'outage');
    assert.equal(placed.length, 1);
    assert.deepEqual(
      faults.map((f) => f.seq),
      faults.map((_, i) => i + 1),
      'numbered in time order',
    );
    for (const f of faults) {
      if (f !== placed[0] && f.node === outage.node) assert.ok(!overlaps(f, placed[0]!, settleMs), `seed ${seed}: fault ${f.seq} overlaps the outage`);
    }
    for (let i = 1; i < faults.length; i++) assert.ok(faults[i - 1]!.atMs <= faults[i]!.atMs);
  }
});

test('chaos plan - bad options are refused', () => {
  assert.throws(() => planFaults({ seed: 1, nodes: 0, durationMs: 1_000 }), RangeError);
  assert.throws(() => planFaults({ seed: 1, nodes: 3, durationMs: 1_000, gapMs: [10, 5] }), RangeError);
});

test('chaos queries - a hang counts against the system unless its entry node was cut off meanwhile', () => {
  const s = queryStats(
    [
      { what: 'read', node: 1, startMs: 0, durationMs: 10, outcome: 'ok' },
      { what: 'read', node: 2, startMs: 0, durationMs: 10_000, outcome: 'hang' },
      { what: 'read', node: 3, startMs: 0, durationMs: 10_000, outcome: 'hang' },
      { what: 'insert', node: 3, startMs: 20, durationMs: 5, outcome: 'error' },
    ],
    [
      { node: 2, kind: 'partition', fromMs: 5_000, toMs: 8_000 },
      { node: 3, kind: 'db-freeze', fromMs: 5_000, toMs: 8_000 },
    ],
  );
  assert.equal(s.ok, 1);
  assert.equal(s.failed, 1);
  assert.equal(s.hungCut, 1);
  assert.deepEqual(
    s.hung.map((q) => q.node),
    [3],
  );
  assert.equal(s.maxMs, 10_000);
  assert.equal(s.maxOkMs, 10);
});

const w = (key: number, origin: number, over: Partial<WriteRecord> = {}): WriteRecord => ({
  key,
  origin,
  acked: true,
  deleted: false,
  deleteUncertain: false,
  ...over,
});
const subs = (o: number) => (o === 1 ? [2] : []);
/** A reading at `key` with version `v` (a replace may drop a field: `extra`). */
const r = (key: number, v = 0, extra: Record<string, unknown> = { pressure: 94_000 }): HeldReading => ({
  key,
  value: v,
  fields: canonicalFields({ timestamp: new Date(key), temperature: v, ...extra }),
});

test('chaos data - exact: acknowledged on origin and subscriber once, deleted nowhere, uncertain consistent', () => {
  const writes = [w(1, 1), w(2, 1, { deleted: true }), w(3, 1, { acked: false }), w(4, 1, { acked: false })];
  const good = verifyData(
    writes,
    [
      { node: 1, own: [r(1), r(3)], replicas: new Map() },
      { node: 2, own: [], replicas: new Map([[1, [r(1), r(3)]]]) },
    ],
    subs,
  );
  assert.deepEqual([good.losses, good.duplicates, good.resurrected, good.orphans, good.stale], [[], [], [], [], []]);
  assert.equal(good.uncertainHeld, 1);

  const bad = verifyData(
    writes,
    [
      { node: 1, own: [r(1), r(1), r(2)], replicas: new Map() },
      { node: 2, own: [r(9)], replicas: new Map([[1, [r(4)]]]) },
    ],
    subs,
  );
  assert.equal(bad.duplicates.length, 1);
  assert.equal(bad.resurrected.length, 1);
  assert.deepEqual(bad.losses.length, 2, bad.losses.join('; ')); // 1 and 2 are not on the subscriber (2 is also resurrected)
  assert.equal(bad.orphans.length, 2, bad.orphans.join('; ')); // 9 was never sent to node-2; node-1 lacks 4
});

test('chaos data - versions: the origin holds its last acknowledged write (or a later unanswered one), every replica the same fields', () => {
  const writes = [w(1, 1, { value: 5, maybe: [] }), w(2, 1, { value: 6, maybe: [8] }), w(3, 1, { value: 7, maybe: [] })];
  const origin = { node: 1, own: [r(1, 5), r(2, 8), r(3, 7, {})], replicas: new Map() };
  const good = verifyData(writes, [origin, { node: 2, own: [], replicas: new Map([[1, [r(1, 5), r(2, 8), r(3, 7, {})]]]) }], subs);
  assert.deepEqual([good.losses, good.stale], [[], []]);
  // a replica behind its origin's update, and one that kept the field a replace dropped
  const stale = verifyData(writes, [origin, { node: 2, own: [], replicas: new Map([[1, [r(1, 4), r(2, 8), r(3, 7)]]]) }], subs);
  assert.equal(stale.stale.length, 2, stale.stale.join('; '));
  assert.match(stale.stale[0]!, /replica of node-1's 1 is version 4, node-1 holds version 5/);
  assert.deepEqual(stale.losses, []);
  // the origin lost an acknowledged update
  const lost = verifyData(writes, [{ ...origin, own: [r(1, 3), r(2, 8), r(3, 7, {})] }], () => []);
  assert.equal(lost.losses.length, 1);
  assert.match(lost.losses[0]!, /holds version 3 of 1, but its last acknowledged write set 5/);
});

test('chaos data - canonical fields ignore the replica bookkeeping and key order', () => {
  const t = new Date(1000);
  assert.equal(
    canonicalFields({ _id: 'x', temperature: 1, timestamp: t }),
    canonicalFields({ timestamp: t, _rev: 9, _origin: 'node-1', _origin_id: 'x', temperature: 1, _id: 'node-1|x' }),
  );
  assert.notEqual(canonicalFields({ temperature: 1 }), canonicalFields({ temperature: 1, pressure: 2 }));
});

test('chaos crdt - agents must agree and match the acknowledged ops; uncertain ops widen the range only', () => {
  const m = new CrdtModel();
  m.gcounter = 10;
  m.gcounterUncertain = 3;
  m.pncounter = -2;
  m.orsetAdded.add('a').add('b').add('c');
  m.orsetRemoved.add('b');
  m.orsetUncertain.add('u');
  const ok = { gcounter: 12, pncounter: -2, orset: ['a', 'c', 'u'] };
  assert.deepEqual(
    verifyCrdts(m, [
      { node: 1, ...ok },
      { node: 2, ...ok },
    ]),
    [],
  );
  assert.equal(
    verifyCrdts(m, [
      { node: 1, ...ok },
      { node: 2, ...ok, gcounter: 11 },
    ]).length,
    1,
  );
  assert.match(verifyCrdts(m, [{ node: 1, ...ok, gcounter: 14 }])[0]!, /gcounter is 14, expected 10/);
  assert.match(verifyCrdts(m, [{ node: 1, ...ok, orset: ['a', 'b', 'c'] }])[0]!, /whose remove was acknowledged/);
  assert.match(verifyCrdts(m, [{ node: 1, ...ok, orset: ['a'] }])[0]!, /lacks c/);
  assert.deepEqual(verifyCrdts(m, []), ['no agent was read']);
  // an element whose remove was sent but not acknowledged may be present or gone
  m.orsetUncertain.add('c');
  assert.deepEqual(verifyCrdts(m, [{ node: 1, ...ok, orset: ['a', 'u'] }]), []);
  assert.deepEqual(verifyCrdts(m, [{ node: 1, ...ok, orset: ['a', 'c'] }]), []);
});
