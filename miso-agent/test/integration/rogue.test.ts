/**
 * Rogue agents against real agent processes over real gRPC sockets (loopback, ephemeral ports):
 * a wrong mesh key as dialer and as acceptor, the right key with a spoofed node id (in the Hello,
 * or at an address pinned to another id), a peer that skips the handshake (a v1 agent, or a rogue
 * pushing state), and a recorded handshake replayed byte for byte on a new connection. In every
 * case the link is refused with a logged code and reason, and nothing the rogue holds is merged.
 * The mDNS impostor across network namespaces is in scenarios/mesh/test/integration/mdns.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { MeshKeys } from '@syncmesh-edge/mesh-auth';
import { encodePeerMessage, decodePeerMessage, peerWire } from '../../src/transport/grpc/peer-wire.js';
import { AcceptorHandshake, DialerHandshake, HANDSHAKE_TIMEOUT_MS } from '../../src/transport/grpc/auth.js';
import type { PeerMessage, ReceivedPeerMessage } from '../../src/sync/messages.js';
import { getCrdtType } from '../../src/crdt/index.js';
import { waitForEvery } from '@syncmesh-edge/lab';
import { spawnAgent, TEST_SECRET, type AgentProc } from '@syncmesh-edge/miso-agent/testing';

const rightKeys = new MeshKeys(TEST_SECRET);
const wrongKeys = new MeshKeys('rogue-mesh-secret-0123456789abcdefghij');
const FN = 'rogue-fn';

/** A gcounter state worth 1000: what every rogue tries to inject. */
function poison(): PeerMessage {
  const g = getCrdtType('gcounter');
  const [state] = g.apply(g.empty(), g.parseOp({ op: 'add', n: 1000 }), 'rogue.1');
  return { updates: { function: FN, entries: [{ object: 'o', name: 'n', type: 'gcounter', gen: 0, state: g.encode(state) }], seq: 1 } };
}

/** True when no rogue state reached the agent. */
async function nothingMerged(a: AgentProc): Promise<void> {
  assert.deepEqual(await a.client.read(FN, 'o', 'n', 'gcounter'), { type: 'gcounter', value: 0, exists: false }, `${a.nodeId} merged rogue state`);
  const peers = (await a.client.status()).peers.map((p) => p.node_id);
  assert.ok(!peers.some((p) => /rogue|mallory|impostor/.test(p)) && !peers.includes('victim-peer'), `${a.nodeId} lists ${JSON.stringify(peers)}`);
}

const log = (a: AgentProc) => a.stderr.join('');

let target: AgentProc;
const servers: grpc.Server[] = [];
const clients: grpc.Client[] = [];
const others: AgentProc[] = [];

before(async () => {
  target = await spawnAgent({ nodeId: 'target' });
});

after(async () => {
  for (const c of clients) c.close();
  for (const s of servers) s.forceShutdown();
  await Promise.all([target, ...others].map((a) => a?.stop()));
});

/** Opens a raw Sync stream to an agent (a scripted rogue dialer). */
function dial(address: string) {
  const Ctor = peerWire().client;
  const c = new Ctor(address, grpc.credentials.createInsecure());
  clients.push(c);
  const call = (c as unknown as { Sync(): grpc.ClientDuplexStream<Buffer, Buffer> }).Sync();
  const inbox: ReceivedPeerMessage[] = [];
  const ended = new Promise<{ code: number; details: string }>((resolve) => {
    call.on('error', (e: grpc.ServiceError) => resolve({ code: e.code, details: e.details }));
    call.on('end', () => resolve({ code: grpc.status.OK, details: 'ended' }));
  });
  call.on('data', (b: Buffer) => inbox.push(decodePeerMessage(b)));
  return {
    call,
    inbox,
    ended,
    next: async () => {
      await waitForEvery('a message from the agent', () => inbox.length > 0, 5_000);
      return inbox.shift()!;
    },
  };
}

/** A scripted rogue acceptor: `onStream` plays the stream. Resolves with its address. */
async function rogueServer(onStream: (call: grpc.ServerDuplexStream<Buffer, Buffer>, first: ReceivedPeerMessage) => void): Promise<string> {
  const s = new grpc.Server();
  servers.push(s);
  s.addService(peerWire().service, {
    Sync: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.once('data', (b: Buffer) => onStream(call, decodePeerMessage(b)));
      call.on('error', () => call.end());
    },
  });
  const port = await new Promise<number>((ok, fail) => s.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? fail(e) : ok(p))));
  return `127.0.0.1:${port}`;
}

test('rogue agent - a dialer with a wrong key is refused by the acceptor, and what it pushes is never read', async () => {
  const r = dial(target.peerAddress);
  const d = new DialerHandshake(wrongKeys, 'rogue-dialer', undefined, target.peerAddress);
  r.call.write(encodePeerMessage(d.hello()));
  const challenge = (await r.next()) as { auth_challenge: { nonce: string } } & ReceivedPeerMessage;
  assert.equal(challenge.body, 'auth_challenge', 'only the challenge before authentication');
  // A rogue ignores that it cannot check the challenge, sends a proof made with its key, then state.
  const { linkProof } = await import('@syncmesh-edge/mesh-auth');
  r.call.write(
    encodePeerMessage({
      auth_proof: {
        proof: linkProof(wrongKeys, {
          role: 'dialer',
          prover: 'rogue-dialer',
          verifier: 'target',
          verifierNonce: challenge.auth_challenge.nonce,
          proverNonce: d.nonce,
        }),
      },
    }),
  );
  r.call.write(encodePeerMessage({ hello: { node_id: 'rogue-dialer', address: '', functions: [FN], incarnation: '1' } }));
  r.call.write(encodePeerMessage(poison()));
  const end = await r.ended;
  assert.equal(end.code, grpc.status.UNAUTHENTICATED);
  assert.match(end.details, /^EDGE_MISO_AUTH: the dialer at .* failed to prove the mesh key for node id 'rogue-dialer'/);
  assert.equal(r.inbox.length, 0, 'nothing after the challenge');
  await waitForEvery('the refusal in the log', () => /"code":"EDGE_MISO_AUTH".*failed to prove the mesh key for node id 'rogue-dialer'/.test(log(target)));
  await nothingMerged(target);
});

test('rogue agent - a dialer that skips the handshake (a v1 agent, or a rogue pushing state) is refused', async () => {
  const r = dial(target.peerAddress);
  r.call.write(encodePeerMessage({ hello: { node_id: 'rogue-v1', address: '', functions: [FN], incarnation: '1' } }));
  r.call.write(encodePeerMessage(poison()));
  const end = await r.ended;
  assert.equal(end.code, grpc.status.UNAUTHENTICATED);
  assert.match(end.details, /^EDGE_MISO_PEER_PROTOCOL: the dialer at .* sent 'hello' before authenticating/);
  await nothingMerged(target);
});

test('rogue agent - a dialer that opens a stream and never proves anything is cut off at the handshake deadline', async () => {
  const r = dial(target.peerAddress);
  const d = new DialerHandshake(wrongKeys, 'rogue-staller', undefined, target.peerAddress);
  r.call.write(encodePeerMessage(d.hello()));
  const t0 = Date.now();
  const end = await r.ended;
  assert.equal(end.code, grpc.status.UNAUTHENTICATED);
  assert.match(end.details, new RegExp(`^EDGE_MISO_AUTH: the dialer at .* did not complete the handshake within ${HANDSHAKE_TIMEOUT_MS} ms`));
  assert.ok(Date.now() - t0 < HANDSHAKE_TIMEOUT_MS + 5_000, `closed after ${Date.now() - t0} ms`);
  await nothingMerged(target);
});

test('rogue agent - the right key but a spoofed id in the Hello is refused and nothing is merged', async () => {
  const r = dial(target.peerAddress);
  const d = new DialerHandshake(rightKeys, 'mallory', 'target', target.peerAddress);
  r.call.write(encodePeerMessage(d.hello()));
  const a = d.onChallenge(await r.next());
  assert.ok(a.ok, 'the handshake itself succeeds: mallory holds the mesh secret');
  r.call.write(encodePeerMessage(a.reply));
  // Authenticated as 'mallory', it claims to be another node and pushes state as that node.
  r.call.write(a.cipher.seal(encodePeerMessage({ hello: { node_id: 'victim-peer', address: '', functions: [FN], incarnation: '1' } })));
  r.call.write(a.cipher.seal(encodePeerMessage(poison())));
  await r.ended;
  await waitForEvery('the refusal in the log', () =>
    /"code":"EDGE_MISO_PEER_ID".*authenticated as 'mallory' but its Hello claims 'victim-peer'/.test(log(target)),
  );
  await nothingMerged(target);
});

test('rogue agent - a wrong-key acceptor, a v1 acceptor and an address pinned to another id are refused by the dialer', async () => {
  let pushed = 0;
  // Wrong key: answers the handshake with its own key, then pushes state regardless.
  const wrongKey = await rogueServer((call, first) => {
    const a = new AcceptorHandshake(wrongKeys, 'rogue-acceptor', 'x');
    const c = a.onHello(first);
    if (c.ok) call.write(encodePeerMessage(c.reply));
    call.write(encodePeerMessage({ hello: { node_id: 'rogue-acceptor', address: '', functions: [FN], incarnation: '1' } }));
    call.write(encodePeerMessage(poison()));
    pushed++;
  });
  // v1-style: no handshake, Hello and state straight away (what every acceptor could do before v2).
  const v1 = await rogueServer((call) => {
    call.write(encodePeerMessage({ hello: { node_id: 'rogue-v1-acceptor', address: '', functions: [FN], incarnation: '1' } }));
    call.write(encodePeerMessage(poison()));
    pushed++;
  });
  // The right key, but not the node the static entry names.
  const mallory = await spawnAgent({ nodeId: 'mallory' });
  others.push(mallory);
  await mallory.client.apply(FN, 'o', 'n', 'gcounter', { op: 'add', n: 1000 });
  const victim = await spawnAgent({ nodeId: 'victim', peers: [wrongKey, v1, `victim-peer@${mallory.peerAddress}`] });
  others.push(victim);
  await waitForEvery(
    'three refusals in the victim log',
    () => {
      const l = log(victim);
      return (
        new RegExp(`"code":"EDGE_MISO_AUTH".*the agent at ${wrongKey} failed to prove the mesh key for node id 'rogue-acceptor'`).test(l) &&
        new RegExp(`"code":"EDGE_MISO_PEER_PROTOCOL".*the agent at ${v1} sent 'hello' instead of the handshake's challenge`).test(l) &&
        // mallory itself refuses a dialer that expects another node (if it lied, the victim's own check would: see auth.test.ts)
        new RegExp(
          `"code":"EDGE_MISO_PEER_ID".*the agent at ${mallory.peerAddress} refused this agent: EDGE_MISO_PEER_ID: .* expects node 'victim-peer' here, but this is 'mallory'`,
        ).test(l)
      );
    },
    15_000,
  ).catch((err: Error) => assert.fail(`${err.message}; victim log:\n${log(victim)}`));
  assert.ok(pushed >= 2, 'both rogue acceptors pushed their state');
  await nothingMerged(victim);
  // mallory is refused before Hello, so it never learns the victim's address either
  assert.deepEqual((await mallory.client.status()).peers, []);
});

test('rogue agent - an impostor that relays a genuine handshake and then injects a message is cut off by the MAC', async () => {
  // The impostor sits where the victim expects node 'target' (an mDNS record or id@host:port it
  // controls), relays every message between the victim and the real target, and once both proofs
  // have passed, writes its own Updates into the victim's stream: unsealed, and with a MAC made
  // under a key of its own.
  const injected: string[] = [];
  const relay = await rogueServer((victimCall, first) => {
    const Ctor = peerWire().client;
    const c = new Ctor(target.peerAddress, grpc.credentials.createInsecure());
    clients.push(c);
    const up = (c as unknown as { Sync(): grpc.ClientDuplexStream<Buffer, Buffer> }).Sync();
    up.on('error', () => victimCall.end());
    victimCall.on('error', () => up.cancel());
    let fromTarget = 0;
    up.on('data', (b: Buffer) => {
      victimCall.write(b);
      // after the challenge and the target's first sealed message, inject
      if (++fromTarget === 2) {
        const poisonBytes = encodePeerMessage(poison());
        victimCall.write(poisonBytes);
        injected.push('unsealed');
        const forged = Buffer.concat([poisonBytes, Buffer.from([0x7a, 0x10]), Buffer.alloc(16, 0xab)]);
        victimCall.write(forged);
        injected.push('forged mac');
      }
    });
    up.write(encodePeerMessage(first));
    victimCall.on('data', (b: Buffer) => up.write(b));
  });
  const victim = await spawnAgent({ nodeId: 'relay-victim', peers: [`target@${relay}`] });
  others.push(victim);
  await waitForEvery(
    'the victim to cut the relayed stream',
    () => /"code":"EDGE_MISO_AUTH".*a message from 'target' at [^ ]+ has a missing or wrong MAC/.test(log(victim)),
    15_000,
  ).catch((err: Error) => assert.fail(`${err.message}; victim log:\n${log(victim)}`));
  assert.ok(injected.length >= 2, 'the impostor injected');
  // the handshake itself passed: both proofs were genuine (the relay only forwarded them)
  assert.ok(!/failed to prove/.test(log(victim)), 'the relayed proofs verified');
  await nothingMerged(victim);
});

/** A TCP relay that records what the dialer sends on the first connection through it. */
async function recordingRelay(target: string): Promise<{ server: Server; address: string; recorded: Buffer[] }> {
  const recorded: Buffer[] = [];
  let first = true;
  const sockets = new Set<Socket>();
  const server = createServer((c) => {
    const record = first;
    first = false;
    const i = target.lastIndexOf(':');
    const up = connect(Number(target.slice(i + 1)), target.slice(0, i));
    for (const s of [c, up]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    c.on('data', (b: Buffer) => {
      if (record) recorded.push(Buffer.from(b));
      up.write(b);
    });
    up.pipe(c);
    c.on('close', () => up.destroy());
    up.on('close', () => c.destroy());
  });
  server.on('close', () => {
    for (const s of sockets) s.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, address: `127.0.0.1:${(server.address() as { port: number }).port}`, recorded };
}

test('rogue agent - a recorded connection replayed byte for byte to another agent is refused, nothing merged', async () => {
  const relay = await recordingRelay(target.peerAddress);
  const fresh = await spawnAgent({ nodeId: 'fresh' });
  others.push(fresh);
  try {
    const a = await spawnAgent({ nodeId: 'replayed', peers: [relay.address] });
    others.push(a);
    await a.client.register(FN, 'r1');
    await target.client.register(FN, 't1');
    await a.client.apply(FN, 'o', 'n', 'gcounter', { op: 'add', n: 1000 });
    await waitForEvery('the genuine link to deliver the add', async () => (await target.client.read(FN, 'o', 'n', 'gcounter')).value === 1000);
    await a.stop();
    assert.ok(relay.recorded.length > 0);
    // The captured bytes: HTTP/2 preface, headers, the handshake, Hello and the sealed state.
    const s = connect(Number(fresh.peerAddress.split(':')[1]), '127.0.0.1');
    s.on('error', () => s.destroy());
    await once(s, 'connect');
    s.write(Buffer.concat(relay.recorded));
    await waitForEvery('the replay to be refused', () =>
      /"code":"EDGE_MISO_AUTH".*failed to prove the mesh key for node id 'replayed' \(wrong MISO_MESH_SECRET, a replayed handshake, or an impostor\)/.test(
        log(fresh),
      ),
    );
    s.destroy();
    assert.deepEqual(await fresh.client.read(FN, 'o', 'n', 'gcounter'), { type: 'gcounter', value: 0, exists: false }, 'the replayed state was not merged');
    assert.deepEqual((await fresh.client.status()).peers, []);
  } finally {
    relay.server.close();
  }
});

test('rogue agent - the genuine mesh still works next to the rogues, and no log holds a secret or a key', async () => {
  const peer = await spawnAgent({ nodeId: 'peer', peers: [`target@${target.peerAddress}`] });
  others.push(peer);
  await peer.client.register('ok-fn', 'p1');
  await target.client.register('ok-fn', 't1');
  await peer.client.apply('ok-fn', 'o', 'n', 'gcounter', { op: 'add', n: 2 });
  await waitForEvery('the add to reach target', async () => (await target.client.read('ok-fn', 'o', 'n', 'gcounter')).value === 2);
  await target.client.apply('ok-fn', 'o', 'n', 'gcounter', { op: 'add', n: 3 });
  await waitForEvery('the add to reach peer', async () => (await peer.client.read('ok-fn', 'o', 'n', 'gcounter')).value === 5);
  for (const a of [target, peer, ...others]) {
    const l = log(a);
    assert.ok(!l.includes(TEST_SECRET) && !l.includes('rogue-mesh-secret'), `${a.nodeId}: a secret in the log`);
    assert.ok(!l.includes(rightKeys.keyFor(a.nodeId, 'agent').toString('hex')), `${a.nodeId}: a key in the log`);
  }
});
