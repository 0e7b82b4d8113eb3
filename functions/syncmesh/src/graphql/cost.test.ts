import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkCost } from './cost.js';

const LIMITS = { maxRootFields: 20, maxTotalLimit: 200_000, maxLimit: 100_000 };
const sensors = (limit?: number) => ({ name: 'sensors', args: limit === undefined ? {} : { limit } });

test('cost - 181 aliased sensors(limit: 100000) are refused by the root field count', () => {
  assert.throws(
    () =>
      checkCost(
        Array.from({ length: 181 }, () => sensors(100_000)),
        true,
        LIMITS,
      ),
    /181 root fields \(aliases count\); at most 20/,
  );
});

test('cost - the limits of all sensors fields are summed; no limit counts as the largest', () => {
  assert.doesNotThrow(() => checkCost([sensors(100_000), sensors(100_000)], true, LIMITS));
  assert.throws(() => checkCost([sensors(100_000), sensors(100_000), sensors(1)], true, LIMITS), /200001 readings in total; at most 200000/);
  assert.throws(() => checkCost([sensors(), sensors(), sensors()], true, LIMITS), /300000 readings/);
  assert.doesNotThrow(() =>
    checkCost(
      Array.from({ length: 20 }, () => sensors(10_000)),
      true,
      LIMITS,
    ),
  );
});

test('cost - aggregate mode counts root fields only', () => {
  assert.doesNotThrow(() => checkCost([sensors(), sensors(), sensors()], false, LIMITS));
});
