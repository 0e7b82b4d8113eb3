import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonToSensor } from './jsonl.js';

test('jsonl - a line becomes the same reading as the CSV row would', () => {
  const r = jsonToSensor(
    '{"sensor_id": 7, "location": 501, "lat": 42.6, "lon": 23.3, "timestamp": "2017-07-01T00:00:00", "temperature": 21.5, "humidity": null}',
    1,
  );
  assert.deepEqual(r, {
    sensor_id: 7,
    location: 501,
    lat: 42.6,
    lon: 23.3,
    timestamp: new Date('2017-07-01T00:00:00Z'),
    pressure: null,
    temperature: 21.5,
    humidity: null,
  });
});

test('jsonl - bad lines name the line and what is wrong', () => {
  assert.throws(
    () => jsonToSensor('{"lat": 42.6, "lon": 23.3, "timestamp": "2017-07-01T00:00:00Z", "temprature": 20}', 3),
    /line 3: unknown field 'temprature'/,
  );
  assert.throws(() => jsonToSensor('{"lat": 42.6, "lon": 23.3}', 4), /line 4/);
  assert.throws(() => jsonToSensor('[1, 2]', 5), /line 5: a JSON object/);
  assert.throws(() => jsonToSensor('{"lat": 95, "lon": 23.3, "timestamp": "2017-07-01T00:00:00Z"}', 6), /line 6: lat\/lon/);
  assert.throws(() => jsonToSensor('{"lat": {"$gt": 1}, "lon": 23.3, "timestamp": "2017-07-01T00:00:00Z"}', 7), /line 7: lat must be a number/);
  assert.throws(() => jsonToSensor('{"lat": 4', 8), /line 8: not JSON/);
});
