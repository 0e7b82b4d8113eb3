/**
 * The peer link handshake and message sealing (auth.ts), without sockets: both ways with the
 * mesh key, wrong keys, spoofed ids, replayed and reflected handshakes, forged, altered,
 * replayed and reordered messages, and the golden handshake of peer protocol v2
 * (test/fixtures/peer/v2/, regenerate with MISO_PEER_UPDATE_FIXTURES=1 after a deliberate change).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { linkProof, MeshKeys } from '@syncmesh-edge/mesh-auth';
import type { AuthHello, PeerMessage, ReceivedPeerMessage } from '../../sync/messages.js';
import { AcceptorHandshake, DialerHandshake, MAC_BYTES, PEER_PROTOCOL_VERSION, type LinkRefusal } from './auth.js';
import { decodePeerMessage, encodePeerMessage } from './peer-wire.js';

const keys = new MeshKeys('peer-link-test-secret-0123456789abcdef');
const otherMesh = new MeshKeys('another-mesh-secret-0123456789abcdefgh');

/** What the peer receives: the message through its encoding. */
const wire = (m: PeerMessage): ReceivedPeerMessage => decodePeerMessage(encodePeerMessage(m));

function refused(r: { ok: boolean }, code: LinkRefusal['code'], reason: RegExp): void {
  assert.equal(r.ok, false, 'refused');
  assert.equal((r as LinkRefusal).code, code);
  assert.match((r as LinkRefusal).reason, reason);
}

/** Runs a whole handshake; returns both sides' results. */
function handshake(dialerKeys: MeshKeys, acceptorKeys: MeshKeys, dialer = 'a', acceptor = 'b', expect?: string) {
  const d = new DialerHandshake(dialerKeys, dialer, expect, 'acceptor:1');
  const a = new AcceptorHandshake(acceptorKeys, acceptor, 'dialer:2');
  const challenge = a.onHello(wire(d.hello()));
  assert.ok(challenge.ok, 'the acceptor answers a well-formed hello');
  const answer = d.onChallenge(wire(challenge.reply));
  if (!answer.ok) return { answer, accepted: undefined };
  return { answer, accepted: a.onProof(wire(answer.reply)) };
}

test('peer auth - two agents with the mesh key authenticate each other and bind both ids', () => {
  const { answer, accepted } = handshake(keys, keys, 'a', 'b', 'b');
  assert.ok(answer.ok && accepted?.ok);
  assert.equal(answer.peerId, 'b');
  assert.equal(accepted.peerId, 'a');
  // sealed both ways
  const hello = encodePeerMessage({ hello: { node_id: 'a', address: '10.0.0.1:7650', functions: ['f'], incarnation: '1' } });
  const sealed = answer.cipher.seal(hello);
  assert.equal(sealed.length, hello.length + 2 + MAC_BYTES);
  assert.deepEqual(accepted.cipher.open(sealed), hello);
  // a sealed message is still a valid PeerMessage (the mac is field 15)
  const m = decodePeerMessage(sealed) as ReceivedPeerMessage & { mac: Uint8Array };
  assert.equal(m.body, 'hello');
  assert.equal(m.mac.length, MAC_BYTES);
  const back = encodePeerMessage({ heartbeat: { sent_ms: 1 } });
  assert.deepEqual(answer.cipher.open(accepted.cipher.seal(back)), back);
});

test('peer auth - a wrong mesh key is refused by the acceptor and by the dialer', () => {
  // rogue dialer: its own check of the real acceptor fails, and a proof made with its key does not verify
  refused(handshake(otherMesh, keys).answer, 'EDGE_MISO_AUTH', /failed to prove the mesh key for node id 'b'/);
  const d = new DialerHandshake(otherMesh, 'a', undefined, 'x');
  const a = new AcceptorHandshake(keys, 'b', 'y');
  const c = a.onHello(wire(d.hello()));
  assert.ok(c.ok);
  const challenge = (c.reply as { auth_challenge: { nonce: string } }).auth_challenge;
  const proof = linkProof(otherMesh, { role: 'dialer', prover: 'a', verifier: 'b', verifierNonce: challenge.nonce, proverNonce: d.nonce });
  refused(a.onProof(wire({ auth_proof: { proof } })), 'EDGE_MISO_AUTH', /failed to prove the mesh key for node id 'a'/);
  // rogue acceptor: the dialer refuses its challenge
  const asAcceptor = handshake(keys, otherMesh);
  refused(asAcceptor.answer, 'EDGE_MISO_AUTH', /the agent at acceptor:1 failed to prove the mesh key for node id 'b'/);
});

test('peer auth - the right key with a spoofed id is refused (expected id, Hello id)', () => {
  // the dialer expects node 'b' at this address (mDNS record, id@host:port) and finds 'mallory'
  // and finds 'mallory', a mesh member that ignores the expected id in the hello
  const dialer = new DialerHandshake(keys, 'a', 'b', 'x');
  const hello = (dialer.hello() as { auth_hello: AuthHello }).auth_hello;
  const mallory = new AcceptorHandshake(keys, 'mallory', 'y').onHello(wire({ auth_hello: { ...hello, expect: '' } }));
  assert.ok(mallory.ok);
  refused(dialer.onChallenge(wire(mallory.reply)), 'EDGE_MISO_PEER_ID', /the agent at x authenticated as 'mallory', but 'b' was expected there/);
  // an acceptor refuses a dialer that expects another node there (a relay of a dial meant for someone else)
  const d = new DialerHandshake(keys, 'a', 'b', 'x');
  refused(new AcceptorHandshake(keys, 'c', 'y').onHello(wire(d.hello())), 'EDGE_MISO_PEER_ID', /expects node 'b' here, but this is 'c'/);
  // a proof made for one id does not verify for another: a dialer claiming 'b' with a proof for 'mallory'
  const honest = new DialerHandshake(keys, 'mallory', undefined, 'x');
  const liar = new DialerHandshake(keys, 'b', undefined, 'x', honest.nonce);
  const acc = new AcceptorHandshake(keys, 'c', 'y');
  const c = acc.onHello(wire(liar.hello()));
  assert.ok(c.ok);
  const p = honest.onChallenge(wire(c.reply));
  // the acceptor's proof was made for 'b', so the dialer named 'mallory' cannot check it either
  refused(p, 'EDGE_MISO_AUTH', /failed to prove/);
});

test('peer auth - a recorded handshake replayed on a new stream is refused', () => {
  const d = new DialerHandshake(keys, 'a', undefined, 'x');
  const a1 = new AcceptorHandshake(keys, 'b', 'y');
  const hello = wire(d.hello());
  const c1 = a1.onHello(hello);
  assert.ok(c1.ok);
  const r = d.onChallenge(wire(c1.reply));
  assert.ok(r.ok);
  const proof = wire(r.reply);
  assert.ok(a1.onProof(proof).ok, 'the original stream');
  // replayed to a new stream of the same acceptor: it has a fresh nonce
  const a2 = new AcceptorHandshake(keys, 'b', 'y');
  assert.ok(a2.onHello(hello).ok);
  refused(a2.onProof(proof), 'EDGE_MISO_AUTH', /failed to prove the mesh key for node id 'a'/);
  // a recorded challenge replayed to a new dial: the dialer has a fresh nonce
  refused(new DialerHandshake(keys, 'a', undefined, 'x').onChallenge(wire(c1.reply)), 'EDGE_MISO_AUTH', /failed to prove/);
  // reflected: the acceptor's own proof sent back as the dialer's proof
  const a3 = new AcceptorHandshake(keys, 'b', 'y');
  const c3 = a3.onHello(hello);
  assert.ok(c3.ok);
  refused(
    a3.onProof(wire({ auth_proof: { proof: (c3.reply as { auth_challenge: { proof: Uint8Array } }).auth_challenge.proof } })),
    'EDGE_MISO_AUTH',
    /failed to prove/,
  );
});

test('peer auth - anything but the handshake first is refused (a v1 agent, a rogue sending state)', () => {
  const a = new AcceptorHandshake(keys, 'b', 'y');
  refused(
    a.onHello(wire({ hello: { node_id: 'a', address: '', functions: [], incarnation: '1' } })),
    'EDGE_MISO_PEER_PROTOCOL',
    /sent 'hello' before authenticating/,
  );
  refused(a.onHello(wire({ updates: { function: 'f', entries: [], seq: 1 } })), 'EDGE_MISO_PEER_PROTOCOL', /sent 'updates'/);
  refused(
    a.onHello(wire({ auth_hello: { version: 1, node_id: 'a', nonce: '0'.repeat(32), expect: '' } })),
    'EDGE_MISO_PEER_PROTOCOL',
    /speaks peer protocol 1/,
  );
  refused(a.onHello(wire({ auth_hello: { version: 2, node_id: 'bad id', nonce: '0'.repeat(32), expect: '' } })), 'EDGE_MISO_PEER_PROTOCOL', /malformed hello/);
  refused(a.onProof(wire({ auth_proof: { proof: Buffer.alloc(32) } })), 'EDGE_MISO_PEER_PROTOCOL', /instead of its proof/);
  const d = new DialerHandshake(keys, 'a', undefined, 'x');
  refused(
    d.onChallenge(wire({ updates: { function: 'f', entries: [], seq: 1 } })),
    'EDGE_MISO_PEER_PROTOCOL',
    /sent 'updates' instead of the handshake's challenge/,
  );
  refused(
    d.onChallenge(wire({ auth_challenge: { version: 2, node_id: 'b', nonce: 'zz', proof: Buffer.alloc(32) } })),
    'EDGE_MISO_PEER_PROTOCOL',
    /malformed challenge/,
  );
});

test('peer auth - forged, altered, replayed, reordered, truncated and unsealed messages fail the MAC', () => {
  const { answer, accepted } = handshake(keys, keys);
  assert.ok(answer.ok && accepted?.ok);
  const m1 = answer.cipher.seal(encodePeerMessage({ heartbeat: { sent_ms: 1 } }));
  const m2 = answer.cipher.seal(encodePeerMessage({ heartbeat: { sent_ms: 2 } }));
  const m3 = answer.cipher.seal(encodePeerMessage({ heartbeat: { sent_ms: 3 } }));
  const altered = Buffer.from(m1);
  altered[2]! ^= 1;
  assert.equal(accepted.cipher.open(altered), undefined, 'altered');
  assert.equal(accepted.cipher.open(m2), undefined, 'reordered (m2 before m1)');
  assert.equal(accepted.cipher.open(m1.subarray(0, m1.length - 1)), undefined, 'truncated');
  assert.equal(accepted.cipher.open(encodePeerMessage({ heartbeat: { sent_ms: 1 } })), undefined, 'unsealed');
  // a message sealed on another link between the same two nodes (a relay's own authenticated link)
  const other = handshake(keys, keys);
  assert.ok(other.answer.ok);
  assert.equal(accepted.cipher.open(other.answer.cipher.seal(encodePeerMessage({ heartbeat: { sent_ms: 1 } }))), undefined, 'sealed for another link');
  // a message sealed the other way round (reflection)
  assert.equal(accepted.cipher.open(accepted.cipher.seal(encodePeerMessage({ heartbeat: { sent_ms: 1 } }))), undefined, 'reflected');
  assert.ok(accepted.cipher.open(m1), 'm1 in order');
  assert.equal(accepted.cipher.open(m1), undefined, 'm1 replayed');
  assert.ok(accepted.cipher.open(m2) && accepted.cipher.open(m3), 'the rest in order');
});

// ------------------------------------------------------------------ golden handshake (peer protocol v2)

const here = dirname(fileURLToPath(import.meta.url));
/** miso-agent/test/fixtures/peer/v2 (this file runs from dist/src/transport/grpc/). */
const FIXTURES = resolve(here, '..', '..', '..', '..', 'test', 'fixtures', 'peer', `v${PEER_PROTOCOL_VERSION}`);
const GOLDEN = {
  secret: 'golden-secret-golden-secret-golden-secret',
  dialer: 'node-a',
  acceptor: 'node-b',
  dialerNonce: '00112233445566778899aabbccddeeff',
  acceptorNonce: 'ffeeddccbbaa99887766554433221100',
};

function goldenMessages(): Record<string, Buffer> {
  const k = new MeshKeys(GOLDEN.secret);
  const d = new DialerHandshake(k, GOLDEN.dialer, GOLDEN.acceptor, 'golden', GOLDEN.dialerNonce);
  const a = new AcceptorHandshake(k, GOLDEN.acceptor, 'golden', GOLDEN.acceptorNonce);
  const authHello = encodePeerMessage(d.hello());
  const c = a.onHello(decodePeerMessage(authHello));
  assert.ok(c.ok);
  const authChallenge = encodePeerMessage(c.reply);
  const r = d.onChallenge(decodePeerMessage(authChallenge));
  assert.ok(r.ok);
  const authProof = encodePeerMessage(r.reply);
  const done = a.onProof(decodePeerMessage(authProof));
  assert.ok(done.ok);
  const helloSealed = r.cipher.seal(encodePeerMessage({ hello: { node_id: GOLDEN.dialer, address: '10.0.0.1:7650', functions: ['fn'], incarnation: '1' } }));
  const fetchSealed = r.cipher.seal(encodePeerMessage({ fetch_request: { id: 1, function: 'fn', object: 'o', name: 'n' } }));
  const helloBackSealed = done.cipher.seal(
    encodePeerMessage({ hello: { node_id: GOLDEN.acceptor, address: '10.0.0.2:7650', functions: ['fn'], incarnation: '1' } }),
  );
  return { authHello, authChallenge, authProof, helloSealed, fetchSealed, helloBackSealed };
}

test('peer wire - the v2 handshake and sealed messages match the golden fixtures', () => {
  const got = goldenMessages();
  if (process.env['MISO_PEER_UPDATE_FIXTURES'] === '1') {
    mkdirSync(FIXTURES, { recursive: true });
    for (const [name, b] of Object.entries(got)) writeFileSync(resolve(FIXTURES, `${name}.bin`), b);
    const index = { ...GOLDEN, messages: Object.fromEntries(Object.entries(got).map(([n, b]) => [n, b.toString('hex')])) };
    writeFileSync(resolve(FIXTURES, 'handshake.json'), `${JSON.stringify(index, null, 2)}\n`);
  }
  const index = JSON.parse(readFileSync(resolve(FIXTURES, 'handshake.json'), 'utf8')) as typeof GOLDEN & { messages: Record<string, string> };
  assert.deepEqual({ ...index, messages: undefined }, { ...GOLDEN, messages: undefined }, 'the inputs of the golden run');
  for (const [name, b] of Object.entries(got)) {
    assert.equal(b.toString('hex'), index.messages[name], `${name} (hex in handshake.json)`);
    assert.deepEqual(readFileSync(resolve(FIXTURES, `${name}.bin`)), b, `${name}.bin`);
  }
  // The golden bytes verify from the acceptor's side too (decoding is not only re-encoding).
  const k = new MeshKeys(GOLDEN.secret);
  const a = new AcceptorHandshake(k, GOLDEN.acceptor, 'golden', GOLDEN.acceptorNonce);
  assert.ok(a.onHello(decodePeerMessage(got['authHello']!)).ok);
  const done = a.onProof(decodePeerMessage(got['authProof']!));
  assert.ok(done.ok);
  const hello = done.cipher.open(got['helloSealed']!);
  assert.ok(hello);
  assert.equal((decodePeerMessage(hello) as { hello: { node_id: string } }).hello.node_id, GOLDEN.dialer);
});
