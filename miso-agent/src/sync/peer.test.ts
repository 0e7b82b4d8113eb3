import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PeerSync } from './peer.js';

test('peer - acks measure lag and clear everything up to their seq', () => {
  const p = new PeerSync('b', '127.0.0.1:1', 0);
  const s1 = p.reserveSeq(100);
  const s2 = p.reserveSeq(110);
  p.reserveSeq(120);
  assert.equal(p.unacked, 3);
  assert.equal(p.acked(s2, 115), 5);
  assert.equal(p.unacked, 1);
  assert.equal(p.acked(s1, 130), undefined, 'an already cleared seq is ignored');
  assert.equal(p.stats.lagCount, 1);
});

test('peer - silence is measured from the last message heard', () => {
  const p = new PeerSync('b', 'x:1', 0);
  p.heard(1000, 10);
  assert.equal(p.isSilent(3999, 3000), false);
  assert.equal(p.isSilent(4001, 3000), true);
  assert.equal(p.stats.bytesReceived, 10);
});
