import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callbackAllowed, functionUrl, parseRequest, retryableStatus } from './worker.js';

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

test('worker - a gateway queue request is parsed; anything else is a bad message', () => {
  const r = parseRequest(
    enc({
      Function: 'syncmesh-fn',
      Method: 'POST',
      Path: '/x',
      QueryString: 'a=1',
      Body: Buffer.from('hi').toString('base64'),
      Header: { 'X-Call-Id': ['abc'] },
    }),
  );
  assert.equal(r?.Function, 'syncmesh-fn');
  assert.equal(functionUrl('http://gateway:8080', r!), 'http://gateway:8080/function/syncmesh-fn/x?a=1');
  for (const bad of [
    null,
    'x',
    { Method: 'POST' },
    { Function: '../etc', Method: 'POST' },
    { Function: 'f', Method: 'post' },
    { Function: 'f', Method: 'POST', Path: 'no-slash' },
    { Function: 'f', Method: 'POST', Path: '/../x' },
  ]) {
    assert.equal(parseRequest(enc(bad)), null, JSON.stringify(bad));
  }
  assert.equal(parseRequest(new TextEncoder().encode('{not json')), null);
});

test('worker - only 5xx, 429 and 408 are retried', () => {
  assert.deepEqual([200, 202, 302, 400, 404, 408, 429, 500, 503].map(retryableStatus), [false, false, false, false, false, true, true, true, true]);
});

test('worker - callbacks only to allowed prefixes (no address of the caller choosing)', () => {
  const allow = ['http://gateway:8080/function/'];
  assert.ok(callbackAllowed('http://gateway:8080/function/receiver', allow));
  assert.ok(!callbackAllowed('http://169.254.169.254/latest/meta-data', allow));
  assert.ok(!callbackAllowed('http://gateway:8080@evil.example/function/x', allow));
  assert.ok(!callbackAllowed('http://gateway:8080/functionx', allow));
  assert.ok(!callbackAllowed('not a url', allow));
});
