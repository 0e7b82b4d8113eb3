import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeDigest } from '../sync/protocol.js';
import { fromWire, ReplicaState } from '../sync/state.js';
import type { PeerMessage, Updates } from '../sync/messages.js';
import { addedFunctions, advertisedAddress, answerRepair, fetchAnswer, helloVerdict, pickRandom } from './peer-protocol.js';

test('peer protocol - a Hello is judged against the authenticated id and our own', () => {
  assert.equal(helloVerdict({ node_id: 'b' }, 'b', 'a'), 'peer');
  assert.equal(helloVerdict({ node_id: 'c' }, 'b', 'a'), 'impostor');
  assert.equal(helloVerdict({ node_id: 'a' }, 'a', 'a'), 'self');
  assert.equal(helloVerdict({ node_id: 'b' }, undefined, 'a'), 'impostor');
});

test('peer protocol - a wildcard advertised address takes the host the peer connected from', () => {
  assert.equal(advertisedAddress('10.0.0.2:7000', 'out', 'x'), '10.0.0.2:7000');
  assert.equal(advertisedAddress('0.0.0.0:7000', 'in', 'ipv4:10.0.0.9:53211'), '10.0.0.9:7000');
  assert.equal(advertisedAddress('[::]:7000', 'in', 'ipv6:[fe80::1]:53211'), '[fe80::1]:7000');
  assert.equal(advertisedAddress('0.0.0.0:7000', 'out', '10.0.0.9:7000'), '');
  assert.equal(advertisedAddress('', 'in', 'ipv4:10.0.0.9:1'), '');
});

test('peer protocol - added functions and random picks', () => {
  assert.deepEqual(addedFunctions(new Set(['f']), ['f', 'g']), ['g']);
  const xs = [1, 2, 3, 4, 5];
  const picked = pickRandom(xs, 3);
  assert.equal(picked.length, 3);
  assert.equal(new Set(picked).size, 3);
  assert.equal(pickRandom(xs, 0).length, 1);
  assert.deepEqual(xs, [1, 2, 3, 4, 5]);
});

test('peer protocol - fetch answers one CRDT or a whole object', () => {
  const s = new ReplicaState();
  s.applyLocal('fn', 'o', 'a', 'gcounter', { op: 'add', n: 1 }, 'r1');
  s.applyLocal('fn', 'o', 'b', 'gcounter', { op: 'add', n: 2 }, 'r1');
  assert.deepEqual(
    fetchAnswer(s, { id: 7, function: 'fn', object: 'o', name: 'a' }).entries.map((e) => e.name),
    ['a'],
  );
  const all = fetchAnswer(s, { id: 8, function: 'fn', object: 'o', name: '' });
  assert.equal(all.id, 8);
  assert.deepEqual(all.entries.map((e) => e.name).sort(), ['a', 'b']);
  assert.deepEqual(fetchAnswer(s, { id: 9, function: 'fn', object: 'none', name: '' }).entries, []);
});

test('peer protocol - a repair round (digest, digest_keys, want) converges two states', () => {
  const a = new ReplicaState();
  const b = new ReplicaState();
  a.applyLocal('fn', 'o', 'x', 'gcounter', { op: 'add', n: 3 }, 'ra');
  b.applyLocal('fn', 'o', 'y', 'gcounter', { op: 'add', n: 4 }, 'rb');
  const deliver = (to: ReplicaState, ms: PeerMessage[]) => {
    for (const m of ms) if ('updates' in m) for (const w of (m.updates as Updates).entries) to.merge('fn', w.object, w.name, fromWire(w));
  };
  const dk = answerRepair(b, { kind: 'digest', digest: makeDigest(a, 'fn') }, 1 << 20);
  assert.equal(dk.length, 1);
  const m = dk[0]!;
  assert.ok('digest_keys' in m);
  const fromA = answerRepair(a, { kind: 'digest_keys', digest_keys: m.digest_keys }, 1 << 20);
  deliver(b, fromA);
  const want = fromA.find((x) => 'want' in x);
  assert.ok(want && 'want' in want);
  deliver(a, answerRepair(b, { kind: 'want', want: want.want }, 1 << 20));
  assert.equal(makeDigest(a, 'fn').root, makeDigest(b, 'fn').root);
  assert.deepEqual(answerRepair(b, { kind: 'digest', digest: makeDigest(a, 'fn') }, 1 << 20), []);
});
