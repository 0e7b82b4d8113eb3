import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SyncmeshError } from './errors.js';
import { ReadGate } from './read-gate.js';

const isBusy = (err: unknown) => err instanceof SyncmeshError && err.code === 'EDGE_SYNCMESH_BUSY' && err.status === 503;

test('read gate - at most `slots` reads at once; a waiter gets the slot that is released', async () => {
  const gate = new ReadGate({ slots: 2, queue: 4, waitMs: 5_000 });
  const r1 = await gate.acquire();
  const r2 = await gate.acquire();
  assert.equal(gate.inUse, 2);
  let third = false;
  const waiting = gate.acquire().then((r) => {
    third = true;
    return r;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(third, false);
  r1();
  const r3 = await waiting;
  assert.equal(gate.inUse, 2);
  r1(); // releasing twice is harmless
  assert.equal(gate.inUse, 2);
  r2();
  r3();
  assert.equal(gate.inUse, 0);
});

test('read gate - a waiter past its wait, or beyond the queue, gets EDGE_SYNCMESH_BUSY', async () => {
  const gate = new ReadGate({ slots: 1, queue: 1, waitMs: 50 });
  const release = await gate.acquire();
  const late = gate.acquire();
  await assert.rejects(gate.acquire(), isBusy); // the queue is full
  await assert.rejects(late, isBusy); // waited 50 ms
  release();
  assert.equal(gate.inUse, 0);
  await gate.run(async () => assert.equal(gate.inUse, 1));
  assert.equal(gate.inUse, 0);
  await assert.rejects(
    gate.run(async () => {
      throw new Error('read failed');
    }),
    /read failed/,
  );
  assert.equal(gate.inUse, 0);
});
