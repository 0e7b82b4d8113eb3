/**
 * A leaf node as the renderer writes it (no root, loopback): a core server with a TLS leaf node
 * listener, a leaf server that joins with the node's nkey (its Ed25519 seed, from an included
 * file) and its own JetStream domain; a function on the leaf uses the core's objects through
 * the domain `mesh`. A leaf whose key the core does not list gets no link.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { connect } from '@nats-io/transport-node';
import { Coordination } from '@syncmesh-edge/coordination-sdk';
import { freePort, httpOk, type Service, startService, waitFor } from '@syncmesh-edge/lab';
import { nkeyFromSeed, nkeyPublic, selfSignedCert, writeEd25519Pem } from '../../src/identity.js';
import { renderNatsConfig } from '../../src/nats-config.js';
import { NATS_SERVER_BIN, skipReason } from '../../src/testing/bins.js';

describe('coordination - a leaf node joins the core with its node key', { skip: skipReason(), timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'coord-leaf-'));
  const procs: Service[] = [];
  after(async () => {
    for (const p of procs) await p.stop();
  });

  async function leaf(name: string, seed: Buffer, core: { leafPort: number }, bundle: string, client: string) {
    const port = await freePort();
    const monitor = await freePort();
    writeFileSync(join(dir, `${name}-seed.conf`), `NODE_SEED: "${nkeyFromSeed(seed)}"\n`, { mode: 0o600 });
    writeFileSync(
      join(dir, `${name}.conf`),
      renderNatsConfig({
        server_name: name,
        role: 'leaf',
        client: { host: '127.0.0.1', port },
        monitor: { host: '127.0.0.1', port: monitor },
        jetstream: { store_dir: join(dir, `${name}-js`), domain: name },
        users: [client],
        leafnodes: { remotes: [`127.0.0.1:${core.leafPort}`], seed_include: `${name}-seed.conf`, ca_file: bundle },
      }),
    );
    const svc = startService(name, [NATS_SERVER_BIN, '-c', join(dir, `${name}.conf`)], join(dir, `${name}.log`), process.env);
    procs.push(svc);
    await waitFor(`${name} monitor`, () => httpOk(`http://127.0.0.1:${monitor}/varz`), 20_000);
    return { port, monitor };
  }

  test('coordination - a function on a leaf node uses the core objects; an unlisted leaf gets no link', async () => {
    const clientSeed = nkeyFromSeed(randomBytes(32));
    const { fromSeed } = await import('@nats-io/nkeys');
    const clientPub = fromSeed(new TextEncoder().encode(clientSeed)).getPublicKey();
    const leafSeed = randomBytes(32);
    const key = join(dir, 'core.key.pem');
    const cert = join(dir, 'core.cert.pem');
    writeEd25519Pem(randomBytes(32), key);
    selfSignedCert(key, cert, 'core-0', ['127.0.0.1']);
    const core = { port: await freePort(), monitor: await freePort(), leafPort: await freePort() };
    writeFileSync(
      join(dir, 'core.conf'),
      renderNatsConfig({
        server_name: 'core-0',
        role: 'core',
        client: { host: '127.0.0.1', port: core.port },
        monitor: { host: '127.0.0.1', port: core.monitor },
        jetstream: { store_dir: join(dir, 'core-js'), domain: 'mesh' },
        users: [clientPub, nkeyPublic(leafSeed)],
        leafnodes: { listen: { host: '127.0.0.1', port: core.leafPort, tls: { cert_file: cert, key_file: key } } },
      }),
    );
    procs.push(startService('core', [NATS_SERVER_BIN, '-c', join(dir, 'core.conf')], join(dir, 'core.log'), process.env));
    await waitFor('core', () => httpOk(`http://127.0.0.1:${core.monitor}/healthz`), 20_000);

    const good = await leaf('node-7', leafSeed, core, cert, clientPub);
    await waitFor(
      'the leaf link',
      async () => {
        const res = await fetch(`http://127.0.0.1:${core.monitor}/leafz`);
        return ((await res.json()) as { leafnodes: number }).leafnodes === 1;
      },
      20_000,
    );
    const nc = await connect({
      servers: `nats://127.0.0.1:${good.port}`,
      authenticator: (await import('@nats-io/nats-core')).nkeyAuthenticator(new TextEncoder().encode(clientSeed)),
    });
    try {
      const coord = await Coordination.open(nc, { namespace: 'leafy', replicas: 1, domain: 'mesh' });
      assert.equal(await coord.atomicLong('n').incrementAndGet(), 1);
      assert.equal(await coord.counter('c').add(2), 2);
    } finally {
      await nc.close();
    }

    await leaf('node-8', randomBytes(32), core, cert, clientPub); // its key is not in the core's users
    await new Promise((r) => setTimeout(r, 2_000)); // the refused leaf retries every second; give it two tries
    const res = await fetch(`http://127.0.0.1:${core.monitor}/leafz`);
    assert.equal(((await res.json()) as { leafnodes: number }).leafnodes, 1, 'the unlisted leaf has no link');
  });
});
