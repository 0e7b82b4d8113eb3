/**
 * GET /metrics of a running listener (a child process): the scraped event counts equal the
 * inserts this test made, the lag goes back to 0 once the function acknowledged them, and errors
 * of the health endpoints are coded JSON.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { scrapeMetrics } from '@syncmesh-edge/lab';
import { metricValue } from '@syncmesh-edge/prometheus';
import { startTestServer } from '@syncmesh-edge/mongo-test-server';
import { isStreaming, SECRET, startListener, waitUntil } from '../../src/testing/harness.js';
import { startFunctionStandIn } from '../../src/testing/standin.js';

const NS = { ns: 'syncmesh.sensor_data' };

test('metrics - events read and acknowledged, resyncs and lag match what happened', async () => {
  const server = await startTestServer();
  const fn = await startFunctionStandIn(SECRET);
  const client = await MongoClient.connect(`${server.uri}?directConnection=true`);
  const p = startListener({
    MONGODB_URI: `${server.uri}?directConnection=true`,
    SYNCMESH_FUNCTION_URL: fn.url,
    LISTENER_HEALTH_ADDR: '127.0.0.1:0',
  });
  try {
    const listening = await p.waitForLog((l) => l.msg === 'health endpoints listening', 15_000, 'health endpoints');
    const url = `http://${String(listening['addr'])}`;
    await p.waitForLog(isStreaming, 30_000, 'streaming');
    await fn.waitFor(() => fn.resyncs.length === 1, 15_000, 'the first-start resync');

    const before = await scrapeMetrics(`${url}/metrics`);
    assert.equal(metricValue(before, 'edge_listener_events_read_total', NS), 0);
    assert.equal(metricValue(before, 'edge_listener_resyncs_total', NS), 1, 'the first start has no position: one resync');
    assert.equal(metricValue(before, 'edge_listener_stream_up', NS), 1);

    const N = 25;
    await client
      .db('syncmesh')
      .collection('sensor_data')
      .insertMany(Array.from({ length: N }, (_, i) => ({ sensor_id: i, temperature: 20 + i, timestamp: new Date() })));
    await fn.waitFor(() => fn.events.length === N, 15_000, `${N} events at the function`);
    // the stand-in counts an event when it answers; the listener counts it when the answer arrives
    let samples = before;
    await waitUntil(
      async () => {
        samples = await scrapeMetrics(`${url}/metrics`);
        // the batch is done once its token is stored too: then nothing is in flight and the lag is 0
        return metricValue(samples, 'edge_listener_events_acknowledged_total', NS) === N && metricValue(samples, 'edge_listener_lag_seconds', NS) === 0;
      },
      15_000,
      'the acknowledgements counted and the batch done',
    );
    assert.equal(metricValue(samples, 'edge_listener_events_read_total', NS), N);
    assert.equal(metricValue(samples, 'edge_listener_events_acknowledged_total', NS), N);
    assert.equal(metricValue(samples, 'edge_listener_resyncs_total', NS), 1);
    assert.equal(metricValue(samples, 'edge_listener_dead_letters_total', NS), 0);
    assert.equal(metricValue(samples, 'edge_listener_queued_events', NS), 0);
    assert.equal(metricValue(samples, 'edge_listener_lag_seconds', NS), 0);
    assert.equal(metricValue(samples, 'edge_listener_function_up', NS), 1);
    assert.ok(metricValue(samples, 'edge_listener_build_info') === 1);

    const bad = await fetch(`${url}/nowhere`);
    assert.equal(bad.status, 404);
    assert.equal(((await bad.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code, 'EDGE_LISTENER_NOT_FOUND');
    const post = await fetch(`${url}/metrics`, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(((await post.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code, 'EDGE_LISTENER_METHOD');
  } finally {
    await p.kill('SIGTERM');
    await client.close();
    await fn.close();
    await server.stop();
  }
});
