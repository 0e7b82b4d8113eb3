import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MeshError } from './errors.js';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { planMesh } from './plan.js';
import { FAASD_PATHS, renderStack, substitute } from './runtime-faasd.js';
import { misoPeers } from './services.js';

const vars = {
  GATEWAY_URL: 'http://10.1.2.11:8080',
  FUNCTION_IMAGE: 'localhost/syncmesh-edge/syncmesh-fn:0.1.0',
  NODE_ID: 'node-1',
  NODE_TIMEOUT_MS: '5000',
  DEADLINE_MS: '15000',
  FORWARD_MODE: 'parallel',
  LOG_LEVEL: 'warn',
  REQUEST_DEADLINE_MS: '20000',
  REPLAY_WINDOW_MS: '30000',
  WATCHDOG_TIMEOUT: '25s',
};

test('faasd stack - the repo stack.yml renders to one deployment with its secret, labels and limits', () => {
  const [fn, ...rest] = renderStack(readFileSync(FAASD_PATHS.stack, 'utf8'), vars);
  assert.equal(rest.length, 0);
  assert.equal(fn!.service, 'syncmesh-fn');
  assert.equal(fn!.image, vars.FUNCTION_IMAGE);
  assert.deepEqual(fn!.secrets, ['mesh-secret', 'write-key', 'mongodb-uri']);
  assert.equal(fn!.envVars['SYNCMESH_NODE_ID'], 'node-1');
  // the MongoDB URI (it may carry credentials) comes from the secret, never from env
  assert.equal(fn!.envVars['MONGODB_URI'], undefined);
  assert.equal(fn!.envVars['MONGODB_URI_FILE'], '/var/openfaas/secrets/mongodb-uri');
  assert.equal(fn!.envVars['SYNCMESH_REQUEST_DEADLINE_MS'], '20000');
  assert.equal(fn!.envVars['SYNCMESH_REPLAY_WINDOW_MS'], '30000');
  assert.equal(fn!.envVars['write_timeout'], '25s');
  assert.equal(fn!.envVars['SYNCMESH_MESH_SECRET_FILE'], '/var/openfaas/secrets/mesh-secret');
  assert.equal(fn!.envVars['SYNCMESH_WRITE_KEY_FILE'], '/var/openfaas/secrets/write-key');
  assert.equal(fn!.envVars['healthcheck_interval'], '1s');
  assert.equal(fn!.labels['com.openfaas.scale.min'], '1');
  assert.equal(fn!.limits?.memory, '256Mi');
  // no secret value ever goes into the environment
  for (const v of Object.values(fn!.envVars)) assert.doesNotMatch(v, /secret-value/);
});

test('faasd stack - an unknown ${NAME} is an error naming it', () => {
  assert.throws(
    () => substitute('image: ${NOPE}', vars),
    (err: unknown) => err instanceof MeshError && err.code === 'EDGE_MESH_FAASD_DEPLOY' && /NOPE/.test(err.message),
  );
});

test('faasd stack - a bad secret name, a bad limit and an unknown key are rejected with what is wrong', () => {
  const bad = `version: 1.0
provider: {name: openfaas}
functions:
  fn:
    image: x
    secrets: [Mesh_Secret]
    limits: {memory: lots}
    replicas: 3
`;
  assert.throws(
    () => renderStack(bad, {}),
    (err: unknown) =>
      err instanceof MeshError &&
      err.code === 'EDGE_MESH_FAASD_DEPLOY' &&
      /secrets\.0/.test(err.message) &&
      /limits\.memory/.test(err.message) &&
      /replicas/.test(err.message),
  );
});

test('faasd stack - text that is not YAML is EDGE_MESH_FAASD_DEPLOY', () => {
  assert.throws(
    () => renderStack('functions: [unclosed', {}),
    (err: unknown) => err instanceof MeshError && err.code === 'EDGE_MESH_FAASD_DEPLOY',
  );
});

test("faasd node - every other agent is a static MISO peer with its node id pinned, at the peer's own address (redirected to its agent link)", () => {
  const plan = planMesh({ name: 'smf0', nodes: 3, isolation: 'netns', subnet: '10.77.3.0/24', stateRoot: '/tmp/x', agentLinks: true });
  assert.equal(misoPeers(plan, plan.nodes[1]!), 'node-1@10.77.3.11:7070,node-3@10.77.3.13:7070');
  // the registry names node-1 by its gateway's URL, as topology.json does
  assert.equal(plan.links.find((l) => l.from === 2 && l.to === 1)!.url, 'http://10.77.3.11:8080/function/syncmesh-fn');
  // what the node's namespace sends through the links instead (PREROUTING covers the containers)
  assert.deepEqual(
    plan.agentLinks.filter((l) => l.from === 2).map((l) => `${l.upstream} -> ${l.listenHost}:${l.listenPort}`),
    ['10.77.3.11:7070 -> 10.77.3.1:25201', '10.77.3.13:7070 -> 10.77.3.1:25203'],
  );
});

test("faasd node - the listener signs /events for the function's node id, the agent gets pinned peers", () => {
  const compose = parseYaml(readFileSync(join(FAASD_PATHS.nodeDir, 'docker-compose.yaml'), 'utf8')) as { services: Record<string, { environment: string[] }> };
  const env = (svc: string) =>
    Object.fromEntries(compose.services[svc]!.environment.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  assert.equal(env('listener')['LISTENER_NODE_ID'], '${NODE_ID}');
  assert.equal(env('listener')['LISTENER_FUNCTION_NODE_ID'], '${NODE_ID}');
  assert.equal(env('miso-agent')['MISO_NODE_ID'], '${NODE_ID}');
  assert.equal(env('miso-agent')['MISO_PEERS'], '${MISO_PEERS}');
});

test('faasd node - the listener and the agent read the MongoDB URI from the mounted mongodb-uri secret, never from env', () => {
  const compose = parseYaml(readFileSync(join(FAASD_PATHS.nodeDir, 'docker-compose.yaml'), 'utf8')) as {
    services: Record<string, { environment: string[]; volumes: { source: string; target: string }[] }>;
  };
  for (const svc of ['listener', 'miso-agent']) {
    const s = compose.services[svc]!;
    assert.ok(s.environment.includes('MONGODB_URI_FILE=/run/secrets/mongodb-uri'), svc);
    assert.equal(
      s.environment.some((kv) => kv.startsWith('MONGODB_URI=')),
      false,
      `${svc} has no MONGODB_URI`,
    );
    assert.ok(
      s.volumes.some((v) => v.source === './secrets/mongodb-uri' && v.target === '/run/secrets/mongodb-uri'),
      `${svc} mounts the secret`,
    );
  }
});
