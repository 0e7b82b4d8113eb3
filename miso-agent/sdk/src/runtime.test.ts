/**
 * The function runtime's answers without an agent: every error is the project's coded JSON
 * (`{"errors":[{"message","extensions":{"code","allowed"}}]}`), never plain text or a stack.
 * The answers that need a running agent (registering, an agent that goes away) are tested
 * against real agents in miso-agent/test/integration.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MisoSdkError } from './errors.js';
import { serveFunction, type FunctionServer, type Handler, type ServeOptions } from './runtime.js';

interface Coded {
  errors: { message: string; extensions: { code: string; allowed?: unknown } }[];
}

async function serve(handler: Handler, opts: ServeOptions = {}): Promise<{ s: FunctionServer; url: string; errors: unknown[] }> {
  const errors: unknown[] = [];
  const s = await serveFunction(handler, { port: 0, agent: false, env: {}, onError: (e) => errors.push(e), ...opts });
  return { s, url: `http://127.0.0.1:${s.port}`, errors };
}

/** The status and the coded error of an answer; fails when the body is not the coded JSON. */
async function coded(res: Response): Promise<{ status: number; code: string; message: string; allowed?: unknown }> {
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await res.json()) as Coded;
  assert.equal(body.errors.length, 1);
  const [e] = body.errors;
  return {
    status: res.status,
    code: e!.extensions.code,
    message: e!.message,
    ...(e!.extensions.allowed === undefined ? {} : { allowed: e!.extensions.allowed }),
  };
}

test('runtime - a replica without an agent socket: 503 EDGE_MISO_SDK_NOT_CONNECTED, coded', async () => {
  const env = { MISO_FUNCTION: 'plain', MISO_SDK_SOCKET: join(tmpdir(), 'no-such-folder-miso-sdk', 'agent.sock') };
  const { s, url } = await serve(() => 'never', { agent: true, env });
  try {
    const r = await coded(await fetch(url, { method: 'POST', body: '1' }));
    assert.equal(r.status, 503);
    assert.equal(r.code, 'EDGE_MISO_SDK_NOT_CONNECTED');
    assert.match(r.message, /com\.syncmesh\.miso=true/);
    assert.equal((await fetch(`${url}/_/health`)).status, 200);
  } finally {
    await s.close();
  }
});

test('runtime - a body over the limit: 413 naming the limit, declared or streamed, and the server keeps serving', async () => {
  let calls = 0;
  const { s, url } = await serve(
    () => {
      calls++;
      return { ok: true };
    },
    { maxBodyBytes: 1000 },
  );
  try {
    const declared = await coded(await fetch(url, { method: 'POST', body: 'x'.repeat(5000) }));
    assert.equal(declared.status, 413);
    assert.equal(declared.code, 'EDGE_MISO_SDK_BODY_TOO_LARGE');
    assert.match(declared.message, /limit of 1000 bytes/);
    assert.equal(declared.allowed, 'a body of at most 1000 bytes');
    // chunked, without a Content-Length: refused once 1000 bytes have passed
    const streamed = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${url}/`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      for (let i = 0; i < 4; i++) req.write('y'.repeat(600));
      req.end();
    });
    assert.equal(streamed.status, 413, streamed.text);
    assert.equal((JSON.parse(streamed.text) as Coded).errors[0]!.extensions.code, 'EDGE_MISO_SDK_BODY_TOO_LARGE');
    assert.equal(calls, 0, 'the handler never ran');
    assert.equal((await fetch(url, { method: 'POST', body: 'x'.repeat(1000) })).status, 200, 'a body at the limit is taken');
  } finally {
    await s.close();
  }
});

test('runtime - a JSON Content-Type with a body that is not JSON: 400 EDGE_MISO_SDK_BAD_JSON; JSON and text reach the handler', async () => {
  const { s, url } = await serve((event) => ({ body: event.body }));
  try {
    const r = await coded(await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n": 1' }));
    assert.equal(r.status, 400);
    assert.equal(r.code, 'EDGE_MISO_SDK_BAD_JSON');
    assert.equal(typeof r.allowed, 'string');
    const json = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"n": 1}' });
    assert.deepEqual(await json.json(), { body: { n: 1 } });
    const text = await fetch(url, { method: 'POST', body: '{"n": 1' });
    assert.deepEqual(await text.json(), { body: '{"n": 1' });
  } finally {
    await s.close();
  }
});

test('runtime - a handler that throws: 500 EDGE_MISO_SDK_HANDLER_FAILED without its text or stack; the error goes to onError', async () => {
  const { s, url, errors } = await serve(() => {
    throw new Error('secret detail of the handler');
  });
  try {
    const res = await fetch(url);
    const text = await res.clone().text();
    const r = await coded(res);
    assert.equal(r.status, 500);
    assert.equal(r.code, 'EDGE_MISO_SDK_HANDLER_FAILED');
    assert.doesNotMatch(text, /secret detail|at .*runtime/);
    assert.equal((errors[0] as Error).message, 'secret detail of the handler');
  } finally {
    await s.close();
  }
});

test('runtime - an answer that cannot be sent as JSON (circular): 500 coded, and the server keeps serving', async () => {
  const { s, url, errors } = await serve((event) => {
    if (event.query['ok']) return { ok: true };
    const a: Record<string, unknown> = {};
    a['self'] = a;
    return a;
  });
  try {
    assert.equal((await coded(await fetch(url))).code, 'EDGE_MISO_SDK_HANDLER_FAILED');
    assert.equal(errors.length, 1);
    assert.deepEqual(await (await fetch(`${url}/?ok=1`)).json(), { ok: true });
  } finally {
    await s.close();
  }
});

test('runtime - a MisoSdkError from the handler: its code; 400 for an operation the agent refused as invalid, 502 when the agent is unreachable, 503 without an agent', async () => {
  const thrown: Record<string, MisoSdkError> = {
    invalid: new MisoSdkError('EDGE_MISO_BAD_REQUEST', 'MISO Apply failed (INVALID_ARGUMENT): object longer than 256 bytes', 3),
    unreachable: new MisoSdkError('EDGE_MISO_SDK_UNAVAILABLE', 'MISO agent not reachable within 15000 ms: timeout', 14),
    deadline: new MisoSdkError('EDGE_MISO_SDK_DEADLINE', 'MISO Apply failed (DEADLINE_EXCEEDED): no answer within 2000 ms', 4),
  };
  const { s, url } = await serve(async (event, context) => {
    const which = event.query['e'] ?? '';
    if (which === 'objects') return context.statefulObject.getGCounter('n').value(); // served without an agent
    throw thrown[which]!;
  });
  try {
    const expect: [string, number, string][] = [
      ['invalid', 400, 'EDGE_MISO_BAD_REQUEST'],
      ['unreachable', 502, 'EDGE_MISO_SDK_UNAVAILABLE'],
      ['deadline', 502, 'EDGE_MISO_SDK_DEADLINE'],
      ['objects', 503, 'EDGE_MISO_SDK_NOT_CONNECTED'],
    ];
    for (const [e, status, code] of expect) {
      const r = await coded(await fetch(`${url}/?e=${e}`));
      assert.deepEqual([r.status, r.code], [status, code], e);
      if (thrown[e]) assert.equal(r.message, thrown[e].message);
    }
  } finally {
    await s.close();
  }
});

test('runtime - context.fail: the coded error with the handler status, message, code and allowed', async () => {
  const { s, url } = await serve((event, context) => {
    switch (event.query['f']) {
      case 'text':
        return context.status(400).fail('the body must be a non-negative integer');
      case 'coded':
        return context.status(422).fail({ code: 'EXAMPLE_TOO_MANY', message: 'at most 3 items', allowed: 'at most 3 items' });
      case 'error':
        return context.status(404).fail(new Error('no such item'));
      default:
        return context.headers({ 'x-demo': '1' }).fail('went wrong');
    }
  });
  try {
    assert.deepEqual(await coded(await fetch(`${url}/?f=text`)), {
      status: 400,
      code: 'EDGE_MISO_SDK_REFUSED',
      message: 'the body must be a non-negative integer',
    });
    assert.deepEqual(await coded(await fetch(`${url}/?f=coded`)), {
      status: 422,
      code: 'EXAMPLE_TOO_MANY',
      message: 'at most 3 items',
      allowed: 'at most 3 items',
    });
    assert.deepEqual(await coded(await fetch(`${url}/?f=error`)), { status: 404, code: 'EDGE_MISO_SDK_REFUSED', message: 'no such item' });
    const res = await fetch(url);
    assert.equal(res.headers.get('x-demo'), '1', "the handler's headers are kept");
    assert.deepEqual(await coded(res), { status: 500, code: 'EDGE_MISO_SDK_HANDLER_FAILED', message: 'went wrong' });
  } finally {
    await s.close();
  }
});
