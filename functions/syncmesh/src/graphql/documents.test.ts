import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'graphql';
import { DocumentCache } from './documents.js';

test('documents - keeps the most recently used documents up to its size', () => {
  const cache = new DocumentCache(2);
  const a = parse('{ a }');
  cache.set('{ a }', a);
  cache.set('{ b }', parse('{ b }'));
  assert.equal(cache.get('{ a }'), a, 'a is now the most recently used');
  cache.set('{ c }', parse('{ c }'));
  assert.equal(cache.get('{ b }'), undefined, 'b was the least recently used');
  assert.equal(cache.get('{ a }'), a);
  assert.equal(cache.size, 2);
});
