import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { metricValue, parseMetrics, PrometheusParseError, selectSamples } from './parse.js';

test('prometheus - reads what prom-client writes: counters, gauges and labelled histograms', async () => {
  const registry = new Registry();
  const c = new Counter({ name: 't_requests_total', help: 'h', labelNames: ['type', 'outcome'], registers: [registry] });
  const h = new Histogram({ name: 't_forward_seconds', help: 'h', labelNames: ['peer'], buckets: [0.1, 1], registers: [registry] });
  c.inc({ type: 'aggregate', outcome: 'ok' }, 3);
  c.inc({ type: 'collect', outcome: 'EDGE_X "quoted"\\ \nline' });
  h.observe({ peer: 'node-2' }, 0.05);
  h.observe({ peer: 'node-2' }, 0.5);
  h.observe({ peer: 'node-3' }, 2);
  const samples = parseMetrics(await registry.metrics());
  assert.equal(metricValue(samples, 't_requests_total', { type: 'aggregate' }), 3);
  assert.equal(metricValue(samples, 't_requests_total', { outcome: 'EDGE_X "quoted"\\ \nline' }), 1);
  assert.equal(metricValue(samples, 't_forward_seconds_count', { peer: 'node-2' }), 2);
  assert.equal(metricValue(samples, 't_forward_seconds_sum', { peer: 'node-2' }), 0.55);
  assert.equal(metricValue(samples, 't_forward_seconds_bucket', { peer: 'node-3', le: '1' }), 0);
  assert.equal(metricValue(samples, 't_forward_seconds_bucket', { peer: 'node-3', le: '+Inf' }), 1);
  assert.equal(selectSamples(samples, 't_forward_seconds_count').length, 2);
  assert.equal(metricValue(samples, 'absent_total'), 0);
  assert.throws(() => metricValue(samples, 't_requests_total'), /2 series/);
});

test('prometheus - special values, timestamps, a trailing comma; bad lines name their line', () => {
  const s = parseMetrics('# HELP x y\nup 1 1700000000000\na{b="c",} Nan\nb +Inf\nc -Inf\n\n');
  assert.deepEqual(
    s.map((x) => [x.name, x.labels, x.value]),
    [
      ['up', {}, 1],
      ['a', { b: 'c' }, Number.NaN],
      ['b', {}, Number.POSITIVE_INFINITY],
      ['c', {}, Number.NEGATIVE_INFINITY],
    ],
  );
  assert.throws(
    () => parseMetrics('ok 1\n{a="b"} 1'),
    (e: unknown) => e instanceof PrometheusParseError && /line 2/.test(e.message),
  );
  assert.throws(() => parseMetrics('x{a="b} 1'), /not closed/);
  assert.throws(() => parseMetrics('x{a=b} 1'), /quoted label value/);
  assert.throws(() => parseMetrics('x one'), /line 1: 'one' is not a sample value/);
});
