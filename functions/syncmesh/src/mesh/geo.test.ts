import { test } from 'node:test';
import assert from 'node:assert/strict';
import { haversineKm } from './geo.js';

const near = (actual: number, expected: number, tolKm: number) =>
  assert.ok(Math.abs(actual - expected) <= tolKm, `${actual} km is not within ${tolKm} km of ${expected} km`);

test('geo - same point is 0 km', () => {
  assert.equal(haversineKm({ lat: 42.69, lon: 23.32 }, { lat: 42.69, lon: 23.32 }), 0);
});

test('geo - known city distances', () => {
  // Published great-circle distances (spherical model), within 0.5%.
  near(haversineKm({ lat: 51.5007, lon: -0.1246 }, { lat: 40.6892, lon: -74.0445 }), 5574.8, 28); // Big Ben - Statue of Liberty
  near(haversineKm({ lat: 52.52, lon: 13.405 }, { lat: 48.2082, lon: 16.3738 }), 523.6, 3); // Berlin - Vienna
  near(haversineKm({ lat: 42.6977, lon: 23.3219 }, { lat: 42.1354, lon: 24.7453 }), 131.6, 1); // Sofia - Plovdiv
});

test('geo - one degree of latitude is about 111.2 km', () => {
  near(haversineKm({ lat: 0, lon: 0 }, { lat: 1, lon: 0 }), 111.195, 0.01);
});

test('geo - antipodes are half the circumference', () => {
  near(haversineKm({ lat: 0, lon: 0 }, { lat: 0, lon: 180 }), Math.PI * 6371.0088, 0.001);
});

test('geo - symmetric', () => {
  const a = { lat: 42.622, lon: 23.366 };
  const b = { lat: 42.7, lon: 23.29 };
  assert.equal(haversineKm(a, b), haversineKm(b, a));
});
