import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { configProblems, intEnv, logLevel, withMongoUriFromFile } from './env.js';

const fail = (message: string, cause?: unknown) => Object.assign(new Error(`bad: ${message}`, { cause }), { code: 'EDGE_DEMO_CONFIG' });

test('env - configProblems names every variable of a refused environment', () => {
  const schema = z.object({ A_PORT: intEnv(1, 10), LOG_LEVEL: logLevel() });
  const r = schema.safeParse({ A_PORT: '11', LOG_LEVEL: 'loud' });
  assert.ok(!r.success);
  const msg = configProblems(r.error);
  assert.match(msg, /^A_PORT: .*; LOG_LEVEL: /);
  assert.equal(schema.parse({ A_PORT: '3' }).LOG_LEVEL, 'info');
});

test('env - MONGODB_URI_FILE supplies MONGODB_URI; both set, unreadable or not a URI is refused without quoting it', () => {
  const uri = 'mongodb://u:s3cret@db:27017/';
  const files: Record<string, string> = { '/s/uri': `${uri}\n`, '/s/bad': 'http://u:s3cret@db/' };
  const read = (p: string) => {
    if (p in files) return files[p]!;
    throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
  };
  assert.deepEqual(withMongoUriFromFile({ MONGODB_URI_FILE: '/s/uri' }, fail, read), { MONGODB_URI_FILE: '/s/uri', MONGODB_URI: uri });
  assert.deepEqual(withMongoUriFromFile({ MONGODB_URI_FILE: '', X: '1' }, fail, read), { MONGODB_URI_FILE: '', X: '1' }, 'empty = unset');
  for (const [env, want] of [
    [{ MONGODB_URI_FILE: '/s/uri', MONGODB_URI: uri }, /both set/],
    [{ MONGODB_URI_FILE: '/s/missing' }, /cannot read \/s\/missing \(ENOENT\)/],
    [{ MONGODB_URI_FILE: '/s/bad' }, /must hold a URI starting with mongodb:\/\//],
  ] as const) {
    assert.throws(
      () => withMongoUriFromFile(env, fail, read),
      (err: Error & { code?: string }) => err.code === 'EDGE_DEMO_CONFIG' && want.test(err.message) && !err.message.includes('s3cret'),
    );
  }
});
