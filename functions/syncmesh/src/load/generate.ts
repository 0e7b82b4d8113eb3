/**
 * Deterministic sensor data with the Sofia columns, for running without the real dataset.
 * The same (sensor, options) always gives the same readings. Values are plausible for Sofia in
 * July: temperature 14-34 °C with a daily cycle, humidity 25-90 % moving against it, pressure
 * around 94,000 Pa (Sofia is at ~550 m), a reading every 150 s.
 */
import type { StoredSensor } from '../data/sensors.js';

export interface GenerateOptions {
  /** First reading. Default 2017-07-01T00:00:00Z. */
  start?: Date;
  /** Days of readings. Default 31 (all of July). */
  days?: number;
  /** Seconds between readings. Default 150. */
  intervalS?: number;
}

/** mulberry32: a small, well-known 32-bit PRNG; good enough for plausible noise. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** Where generated sensor `n` stands: spread over Sofia (42.62-42.75 N, 23.23-23.42 E). */
export function generatedLocation(n: number): { lat: number; lon: number } {
  const r = prng(n * 7919);
  return { lat: Math.round((42.62 + r() * 0.13) * 1000) / 1000, lon: Math.round((23.23 + r() * 0.19) * 1000) / 1000 };
}

export function* generateSensorData(sensor: number, opts: GenerateOptions = {}): Generator<StoredSensor> {
  const start = (opts.start ?? new Date('2017-07-01T00:00:00Z')).getTime();
  const intervalMs = (opts.intervalS ?? 150) * 1000;
  const end = start + (opts.days ?? 31) * 86_400_000;
  const rand = prng(sensor);
  const { lat, lon } = generatedLocation(sensor);
  const offsetT = rand() * 3 - 1.5; // each sensor runs a little warmer or cooler
  const basePressure = 93_600 + rand() * 800;
  let t = start + Math.floor(rand() * intervalMs);
  while (t < end) {
    const hour = (((t / 3_600_000) % 24) + 24) % 24;
    const day = Math.cos(((hour - 15) / 24) * 2 * Math.PI); // warmest at 15:00 UTC+0
    const temperature = 24 + offsetT + 8 * day + (rand() - 0.5) * 1.5;
    const humidity = Math.min(95, Math.max(20, 55 - 22 * day + (rand() - 0.5) * 6));
    const pressure = basePressure + 150 * Math.sin(t / 86_400_000 / 3) + (rand() - 0.5) * 20;
    yield {
      sensor_id: 1000 + sensor,
      location: 500 + sensor,
      lat,
      lon,
      timestamp: new Date(t),
      pressure: round2(pressure),
      temperature: round2(temperature),
      humidity: round2(humidity),
    };
    t += intervalMs + Math.floor((rand() - 0.5) * 10_000);
  }
}
