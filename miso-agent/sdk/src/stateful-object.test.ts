import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MisoClient } from './client.js';
import { StatefulObject } from './stateful-object.js';

function fakeClient() {
  const calls: unknown[][] = [];
  const client = {
    apply: async (...a: unknown[]) => void calls.push(['apply', ...a]),
    read: async (...a: unknown[]) => {
      calls.push(['read', ...a]);
      return { type: String(a[3]), value: 7, exists: true };
    },
    delete: async (...a: unknown[]) => {
      calls.push(['delete', ...a]);
      return 1;
    },
  } as unknown as MisoClient;
  return { client, calls };
}

test('stateful object - the MISO listing maps to typed operations on the object', async () => {
  const { client, calls } = fakeClient();
  const so = new StatefulObject(client, 'fn', 'obj');
  await so.getGCounter('totalSum').add(1);
  await so.getPNCounter('p').subtract(2);
  await so.getORSet('s').remove('x');
  await so.getORMap('m').set('k', { a: 1 });
  await so.getEWFlag('f').enable();
  await so.getLWWRegister('r').set('v');
  assert.equal(await so.getGCounter('totalSum').value(), 7);
  assert.equal(await so.getGSet('g').delete(), true);
  assert.deepEqual(calls, [
    ['apply', 'fn', 'obj', 'totalSum', 'gcounter', { op: 'add', n: 1 }],
    ['apply', 'fn', 'obj', 'p', 'pncounter', { op: 'add', n: -2 }],
    ['apply', 'fn', 'obj', 's', 'orset', { op: 'remove', value: 'x' }],
    ['apply', 'fn', 'obj', 'm', 'ormap', { op: 'set', key: 'k', value: { a: 1 } }],
    ['apply', 'fn', 'obj', 'f', 'ewflag', { op: 'enable' }],
    ['apply', 'fn', 'obj', 'r', 'lwwregister', { op: 'set', value: 'v' }],
    ['read', 'fn', 'obj', 'totalSum', 'gcounter'],
    ['delete', 'fn', 'obj', 'g'],
  ]);
});
