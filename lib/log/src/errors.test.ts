import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CodedError } from './index.js';

type DemoCode = 'EDGE_DEMO_ONE' | 'EDGE_DEMO_TWO';
class DemoError extends CodedError<DemoCode> {
  override name = 'DemoError';
}

test('a CodedError subclass keeps its code, its name, its message and its cause', () => {
  const cause = new Error('underneath');
  const err = new DemoError('EDGE_DEMO_TWO', 'what went wrong', { cause });
  assert.ok(err instanceof Error && err instanceof CodedError && err instanceof DemoError);
  assert.equal(err.code, 'EDGE_DEMO_TWO');
  assert.equal(err.name, 'DemoError');
  assert.equal(err.message, 'what went wrong');
  assert.equal(err.cause, cause);
  assert.equal(String(err), 'DemoError: what went wrong');
});
