import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LabError } from './errors.js';
import { parseResp } from './resp.js';

const b = (s: string) => Buffer.from(s);

test('parseResp reads every RESP2 reply kind, exactly by length', () => {
  assert.deepEqual(parseResp(b('+PONG\r\n')), { value: 'PONG', next: 7 });
  assert.deepEqual(parseResp(b(':-42\r\n')), { value: -42, next: 6 });
  assert.deepEqual(parseResp(b('$-1\r\n')), { value: null, next: 5 });
  // a bulk string may hold CRLF: it is read by its length, not up to the first line end
  assert.deepEqual(parseResp(b('$8\r\na\r\nb:c\r\n\r\n')), { value: 'a\r\nb:c\r\n', next: 14 });
  assert.deepEqual(parseResp(b('*2\r\n:1\r\n$1\r\nx\r\n')), { value: [1, 'x'], next: 15 });
});

test('parseResp waits for the rest of a split reply', () => {
  assert.equal(parseResp(b('$5\r\nab')), undefined);
  assert.equal(parseResp(b('*2\r\n:1\r\n')), undefined);
  assert.equal(parseResp(b(':12')), undefined);
});

test('parseResp turns an error reply and garbage into EDGE_LAB_REDIS', () => {
  assert.throws(
    () => parseResp(b('-ERR wrong type\r\n')),
    (e: unknown) => e instanceof LabError && e.code === 'EDGE_LAB_REDIS' && /wrong type/.test(e.message),
  );
  assert.throws(
    () => parseResp(b('hello\r\n')),
    (e: unknown) => e instanceof LabError && e.code === 'EDGE_LAB_REDIS',
  );
});
