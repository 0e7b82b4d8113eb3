import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { haversineKm, linkShapes, toxicsFor, validateProfile } from './latency.js';
import { MeshError } from '../errors.js';

const sofia = new Map([
  [1, { lat: 42.622, lon: 23.366 }],
  [2, { lat: 42.7, lon: 23.3 }],
  [3, { lat: 42.622, lon: 23.366 }],
]);

test('latency - haversine of a known distance (Sofia to Plovdiv, about 132 km)', () => {
  const km = haversineKm({ lat: 42.6977, lon: 23.3219 }, { lat: 42.1354, lon: 24.7453 });
  assert.ok(km > 128 && km < 136, `${km}`);
});

test('latency - none has no toxics, site is 1-2 ms one-way and symmetric', () => {
  assert.ok(linkShapes('none', 3, sofia).every((s) => toxicsFor(s.upstream, 'upstream').length === 0));
  const site = linkShapes('site', 3, sofia);
  for (const s of site) {
    assert.ok(s.upstream.latencyMs >= 1 && s.upstream.latencyMs <= 2);
    const back = site.find((x) => x.from === s.to && x.to === s.from)!;
    assert.equal(back.upstream.latencyMs, s.upstream.latencyMs);
  }
});

test('latency - regional grows with distance from a 5 ms base', () => {
  const shapes = linkShapes('regional', 3, sofia);
  const same = shapes.find((s) => s.from === 1 && s.to === 3)!;
  const far = shapes.find((s) => s.from === 1 && s.to === 2)!;
  assert.equal(same.upstream.latencyMs, 5);
  assert.equal(far.upstream.latencyMs, Math.round(5 + 0.1 * haversineKm(sofia.get(1)!, sofia.get(2)!)));
  assert.equal(far.upstream.jitterMs, 1);
});

test('latency - a file sets explicit pairs, a default, bandwidth and loss', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-lat-'));
  try {
    const file = join(dir, 'l.json');
    writeFileSync(
      file,
      JSON.stringify({
        default: { latency_ms: 3 },
        links: [{ from: 'node-1', to: 'node-2', latency_ms: 40, jitter_ms: 4, bandwidth_kbit_s: 800, loss: 0.1, symmetric: false }],
      }),
    );
    const shapes = linkShapes(file, 3, new Map());
    const ab = shapes.find((s) => s.from === 1 && s.to === 2)!;
    assert.deepEqual(ab.upstream, { latencyMs: 40, jitterMs: 4, bandwidthKbitS: 800, loss: 0.1 });
    assert.equal(ab.downstream.latencyMs, 3, 'not symmetric: the way back uses the default');
    const toxics = toxicsFor(ab.upstream, 'upstream');
    assert.deepEqual(
      toxics.map((t) => t.type),
      ['latency', 'bandwidth', 'latency'],
    );
    assert.equal(toxics[1]!.attributes['rate'], 100);
    assert.equal(toxics[2]!.toxicity, 0.1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('latency - an unknown profile or a bad file fails before anything starts', () => {
  assert.throws(
    () => validateProfile('/nonexistent/lat.json', 3),
    (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_LATENCY_FILE',
  );
  const dir = mkdtempSync(join(tmpdir(), 'mesh-lat-'));
  try {
    const file = join(dir, 'l.json');
    writeFileSync(file, JSON.stringify({ links: [{ from: 'node-1', to: 'node-9', latency_ms: 4 }] }));
    assert.throws(() => validateProfile(file, 3), /node-9' is not a node of this 3-node mesh/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
