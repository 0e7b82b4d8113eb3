import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MeshError } from '../errors.js';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { planMesh } from '../plan/plan.js';
import { FAASD_PATHS, renderFunctions, renderNode } from './faasd.js';
import { misoPeers } from './services.js';

/** The golden rendering of the node description (images/node/golden): the same bytes through every consumer. */
const GOLDEN = join(FAASD_PATHS.nodeDir, 'golden');
const golden = JSON.parse(readFileSync(join(GOLDEN, 'values.json'), 'utf8')) as Record<string, string>;
const { FUNCTION_IMAGE, NODE_TIMEOUT_MS, DEADLINE_MS, FORWARD_MODE, REQUEST_DEADLINE_MS, REPLAY_WINDOW_MS, WATCHDOG_TIMEOUT, NODE_ID, LOG_LEVEL } = golden;
const fnVars = {
  FUNCTION_IMAGE,
  NODE_TIMEOUT_MS,
  DEADLINE_MS,
  FORWARD_MODE,
  REQUEST_DEADLINE_MS,
  REPLAY_WINDOW_MS,
  WATCHDOG_TIMEOUT,
  NODE_ID,
  LOG_LEVEL,
} as Record<string, string>;

test('faasd node description - the mesh renders the golden compose file and functions byte for byte', async () => {
  assert.equal(await renderNode('compose', golden), readFileSync(join(GOLDEN, 'docker-compose.yaml'), 'utf8'));
  assert.equal(await renderNode('functions', golden), readFileSync(join(GOLDEN, 'functions.json'), 'utf8'));
});

test('faasd node description - one deployment with its secrets, labels and limits, no secret in env', async () => {
  const [fn, ...rest] = await renderFunctions(fnVars);
  assert.equal(rest.length, 0);
  assert.equal(fn!.service, 'syncmesh-fn');
  assert.equal(fn!.image, FUNCTION_IMAGE);
  assert.deepEqual(fn!.secrets, ['mesh-secret', 'write-key', 'mongodb-uri']);
  assert.equal(fn!.envVars['SYNCMESH_NODE_ID'], NODE_ID);
  // the MongoDB URI (it may carry credentials) comes from the secret, never from env
  assert.equal(fn!.envVars['MONGODB_URI'], undefined);
  assert.equal(fn!.envVars['MONGODB_URI_FILE'], '/var/openfaas/secrets/mongodb-uri');
  assert.equal(fn!.envVars['write_timeout'], WATCHDOG_TIMEOUT);
  assert.equal(fn!.envVars['SYNCMESH_WRITE_KEY_FILE'], '/var/openfaas/secrets/write-key');
  assert.equal(fn!.labels['com.openfaas.scale.min'], '1');
  assert.equal(fn!.limits?.memory, '256Mi');
  assert.equal(fn!.envProcess, undefined);
});

test('faasd node description - an input without a value, a value that is not an input and a bad function are EDGE_MESH_FAASD_DEPLOY naming each', async () => {
  const { NODE_ID: _, ...noId } = fnVars;
  await assert.rejects(
    renderFunctions(noId),
    (err: unknown) => err instanceof MeshError && err.code === 'EDGE_MESH_FAASD_DEPLOY' && /needs \$\{NODE_ID\}/.test(err.message),
  );
  await assert.rejects(
    renderFunctions({ ...fnVars, NOPE: 'x' }),
    (err: unknown) => err instanceof MeshError && err.code === 'EDGE_MESH_FAASD_DEPLOY' && /value NOPE: not an input/.test(err.message),
  );
  const bad = readFileSync(FAASD_PATHS.description, 'utf8')
    .replace('      - mesh-secret\n      - write-key', '      - Mesh_Secret\n      - write-key')
    .replace('memory: 256Mi', 'memory: lots')
    .replace('      SYNCMESH_NODE_ID: ${NODE_ID}', '      SYNCMESH_NODE_ID: ${NODE_IDD}');
  await assert.rejects(
    renderFunctions(fnVars, bad),
    (err: unknown) =>
      err instanceof MeshError &&
      err.code === 'EDGE_MESH_FAASD_DEPLOY' &&
      /secrets\.0: a lowercase DNS label/.test(err.message) &&
      /limits\.memory/.test(err.message) &&
      /\$\{NODE_IDD\} is not an input/.test(err.message),
  );
  await assert.rejects(renderFunctions(fnVars, 'functions: [unclosed'), (err: unknown) => err instanceof MeshError && /not YAML/.test(err.message));
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
  const compose = parseYaml(readFileSync(join(GOLDEN, 'docker-compose.yaml'), 'utf8')) as { services: Record<string, { environment: string[] }> };
  const env = (svc: string) =>
    Object.fromEntries(compose.services[svc]!.environment.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  assert.equal(env('listener')['LISTENER_NODE_ID'], golden['NODE_ID']);
  assert.equal(env('listener')['LISTENER_FUNCTION_NODE_ID'], golden['NODE_ID']);
  assert.equal(env('miso-agent')['MISO_NODE_ID'], golden['NODE_ID']);
  assert.equal(env('miso-agent')['MISO_PEERS'], golden['MISO_PEERS']);
});

test('faasd node - the listener and the agent read the MongoDB URI from the mounted mongodb-uri secret, never from env', () => {
  const compose = parseYaml(readFileSync(join(GOLDEN, 'docker-compose.yaml'), 'utf8')) as {
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
