import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ValuesInFlight } from './answers.js';

test('values in flight: requests are admitted up to the cap, one alone always, each released once', () => {
  const inFlight = new ValuesInFlight(1_600_000);
  const a = inFlight.admit(800_000);
  const b = inFlight.admit(800_000);
  assert.equal(inFlight.inFlight, 1_600_000);
  assert.throws(
    () => inFlight.admit(1),
    (err: Error & { code?: string; details?: { allowed?: string } }) =>
      err.code === 'EDGE_SYNCMESH_BUSY' && /SYNCMESH_MAX_VALUES_IN_FLIGHT/.test(err.details?.allowed ?? ''),
  );
  a();
  a(); // twice: counted once
  assert.equal(inFlight.inFlight, 800_000);
  const c = inFlight.admit(800_000);
  b();
  c();
  assert.equal(inFlight.inFlight, 0);
  // nothing else runs: a request over the cap on its own is admitted (its own limit is SYNCMESH_MAX_ANSWER_VALUES)
  const big = inFlight.admit(2_000_000);
  assert.throws(() => inFlight.admit(1));
  big();
  assert.equal(inFlight.inFlight, 0);
});
