import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDateTime } from './datetime.js';

test('datetime - a value without a zone is UTC', () => {
  assert.equal(parseDateTime('2017-07-31T00:02:09').toISOString(), '2017-07-31T00:02:09.000Z');
  assert.equal(parseDateTime('2017-07-31').toISOString(), '2017-07-31T00:00:00.000Z');
});

test('datetime - zones and fractions are honoured', () => {
  assert.equal(parseDateTime('2017-07-31T03:00:00+03:00').toISOString(), '2017-07-31T00:00:00.000Z');
  assert.equal(parseDateTime('2017-07-31T00:00:00.25Z').toISOString(), '2017-07-31T00:00:00.250Z');
  assert.equal(parseDateTime('2017-07-31T00:00:00-0130').toISOString(), '2017-07-31T01:30:00.000Z');
});

test('datetime - garbage and impossible dates are rejected with the value', () => {
  assert.throws(() => parseDateTime('yesterday'), /'yesterday' is not an ISO-8601 date-time/);
  assert.throws(() => parseDateTime('2017-02-31T00:00:00Z'), /not a valid date-time/);
  assert.throws(() => parseDateTime('2017-13-01'), /not a valid date-time/);
  assert.throws(() => parseDateTime('2017-07-31T25:00:00'), /not a valid date-time/);
});
