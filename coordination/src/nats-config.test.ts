import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CoordinationComponentError } from './errors.js';
import { type NatsSpec, renderNatsConfig } from './nats-config.js';

const USER = `U${'A'.repeat(55)}`;
const tls = { cert_file: '/etc/nats/node.crt', key_file: '/etc/nats/node.key', ca_file: '/etc/nats/core-bundle.pem' };
const core: NatsSpec = {
  server_name: 'node-1',
  role: 'core',
  client: { host: '10.62.0.1', port: 4222 },
  monitor: { host: '127.0.0.1', port: 8222 },
  jetstream: { store_dir: '/var/lib/nats', domain: 'mesh' },
  users: [USER],
  cluster: { name: 'syncmesh', host: '192.168.1.11', port: 6222, routes: ['192.168.1.12:6222', '192.168.1.13:6222'], tls },
  leafnodes: { listen: { host: '192.168.1.11', port: 7422, tls: { cert_file: tls.cert_file, key_file: tls.key_file } } },
};

test('nats-config - a core server: JetStream domain mesh, nkey users, mutual-TLS routes, leaf node listener', () => {
  const conf = renderNatsConfig(core);
  for (const line of [
    'server_name: "node-1"',
    'listen: "10.62.0.1:4222"',
    'domain: "mesh"',
    'sync_interval: "always"',
    `{ nkey: "${USER}" }`,
    'listen: "192.168.1.11:6222"',
    'verify: true',
    'ping_interval: "1s"',
    '"nats-route://192.168.1.12:6222"',
    'listen: "192.168.1.11:7422"',
  ]) {
    assert.ok(conf.includes(line), `missing ${line}\n${conf}`);
  }
  assert.ok(!conf.includes('remotes'));
});

test('nats-config - a leaf server: its own domain, the seed from an included file, TLS to the core', () => {
  const conf = renderNatsConfig({
    server_name: 'node-7',
    role: 'leaf',
    client: { host: '10.62.0.1', port: 4222 },
    jetstream: { store_dir: '/var/lib/nats', domain: 'node-7' },
    users: [USER],
    leafnodes: { remotes: ['192.168.1.11:7422', '192.168.1.12:7422'], seed_include: 'node-seed.conf', ca_file: '/etc/nats/core-bundle.pem' },
  });
  assert.ok(conf.includes('include "node-seed.conf"'));
  assert.ok(conf.includes('nkey: $NODE_SEED'));
  assert.ok(conf.includes('urls: ["tls://192.168.1.11:7422", "tls://192.168.1.12:7422"]'));
  assert.ok(!conf.includes('cluster {'));
  assert.ok(!/SU[A-Z2-7]{50}/.test(conf), 'no seed in the configuration');
});

test('nats-config - bad specifications are refused, naming every problem', () => {
  const bad = (spec: unknown, ...want: string[]) => {
    assert.throws(
      () => renderNatsConfig(spec),
      (err: unknown) => err instanceof CoordinationComponentError && err.code === 'EDGE_COORDINATION_NATS_SPEC' && want.every((w) => err.message.includes(w)),
    );
  };
  bad({ ...core, server_name: 'node 1' }, 'server_name');
  bad({ ...core, users: ['not-a-key'] }, 'users.0');
  bad({ ...core, users: [] }, 'at least one client nkey');
  bad({ ...core, jetstream: { store_dir: 'relative', domain: 'mesh' } }, 'jetstream.store_dir');
  bad({ ...core, role: 'leaf' }, 'a leaf server has no cluster', 'leafnodes.remotes');
  bad({ ...core, cluster: { ...core.cluster, routes: ['a:1', 'b:2', 'c:3', 'd:4', 'e:5'] } }, 'cluster.routes');
  bad({ ...core, extra: 1 }, 'extra');
});
