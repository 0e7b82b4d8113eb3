/**
 * Standard GraphQL tools against a node (issue 32): the standard introspection query (what
 * GraphiQL, Apollo Sandbox, Postman and graphql-codegen send first, 15 levels deep) is answered
 * from the schema alone, bounded by its own depth limit and the answer estimate, never forwarded;
 * the SDL is served for download. Driven by a client we did not write: graphql-core (Python),
 * installed by this test into .cache/graphql-core-venv from test/python/requirements.txt.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { getIntrospectionQuery, printSchema } from 'graphql';
import { dataSchema, metaSchema } from '../../src/graphql/schema.js';
import { addNode, post, reading, seed, startNode, startWatchedPeer, type TestNode } from './harness.js';

const PACKAGE = join(import.meta.dirname, '..', '..', '..');
const REPO = join(PACKAGE, '..', '..');
const PYTHON_DIR = join(PACKAGE, 'test', 'python');
const VENV = join(REPO, '.cache', 'graphql-core-venv');

/** The venv with graphql-core, created (or brought up to date with requirements.txt) here. */
function graphqlCorePython(): string {
  const requirements = readFileSync(join(PYTHON_DIR, 'requirements.txt'), 'utf8');
  const stamp = join(VENV, '.requirements');
  const python = join(VENV, 'bin', 'python');
  if (!existsSync(python) || !existsSync(stamp) || readFileSync(stamp, 'utf8') !== requirements) {
    execFileSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' });
    execFileSync(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', join(PYTHON_DIR, 'requirements.txt')], {
      stdio: 'inherit',
      timeout: 300_000,
    });
    writeFileSync(stamp, requirements);
  }
  return python;
}

let node: TestNode;

before(async () => {
  node = await startNode('intro');
  await seed(node, [reading('2017-07-10T00:00:00Z', 20, 50, 93_000), reading('2017-07-11T00:00:00Z', 21, 51, 93_001)]);
  await addNode(node, { id: 'intro', address: node.url, lat: 42.6, lon: 23.3, own_node: true });
});
after(() => node.close());

interface Checked {
  request_type: string;
  introspection_extensions: Record<string, unknown>;
  types: string[];
  sdl_status: number;
  sdl_content_type: string;
  sdl_matches: boolean;
  breaking: string[];
  dangerous: string[];
  query: string;
  status: number;
  errors: unknown;
  data: Record<string, any>;
}

test('introspection - graphql-core introspects the node, its client schema equals the downloaded SDL, and a query built from it runs', async () => {
  const python = graphqlCorePython();
  // asynchronously: the node answers from this very process
  const { stdout: out } = await promisify(execFile)(python, [join(PYTHON_DIR, 'introspect.py'), node.url], { encoding: 'utf8', timeout: 60_000 });
  const [data, metaAnswer] = JSON.parse(out) as [Checked, Checked];
  for (const c of [data, metaAnswer]) {
    assert.equal(c.introspection_extensions['introspection'], true, c.request_type);
    assert.equal(c.sdl_status, 200);
    assert.match(c.sdl_content_type, /^text\/plain/);
    assert.ok(c.sdl_matches, `${c.request_type}: the introspected schema prints as the downloaded SDL`);
    assert.deepEqual(c.breaking, []);
    assert.deepEqual(c.dangerous, []);
    assert.equal(c.status, 200, JSON.stringify(c.errors));
    assert.equal(c.errors, null, 'no errors');
  }
  assert.deepEqual(data.types, [
    'Boolean',
    'DateTime',
    'Float',
    'ID',
    'Int',
    'Mutation',
    'Query',
    'Sensor',
    'SensorAggregate',
    'SensorInput',
    'SensorUpdate',
    'String',
  ]);
  assert.match(data.query, /sensors\(limit: 2\) \{ _id sensor_id location lat lon timestamp temperature humidity pressure \}/);
  assert.equal(data.data['sensors'].length, 2);
  assert.equal(data.data['sensorsAggregate'].count, 2);
  assert.equal(data.data['docEstimate'], 2);
  assert.equal(metaAnswer.data['ownNode'].id, 'intro');
});

test('introspection - the standard query is answered from the schema, never forwarded, and cached', async () => {
  const peer = await startWatchedPeer();
  const url = peer.url;
  try {
    await addNode(node, { id: 'intro-peer', address: url, lat: 42.6, lon: 23.3 });
    const body = { query: getIntrospectionQuery(), operationName: 'IntrospectionQuery', use_meta_data: true, external_nodes: [url] };
    const first = await post(node.url, body);
    assert.equal(first.status, 200, JSON.stringify(first.body).slice(0, 300));
    assert.equal(first.body.extensions!['introspection'], true);
    assert.equal(first.body.extensions!['cost'].depth, 15);
    const again = await post(node.url, body);
    assert.deepEqual(again.body.data, first.body.data);
    assert.equal(peer.connections, 0, 'no other node was asked');
  } finally {
    peer.close();
  }
});

test('introspection - bounded on its own terms: deeper than SYNCMESH_MAX_INTROSPECTION_DEPTH or an alias bomb is refused with 400 and allowed', async () => {
  let ofType = '{ name }';
  for (let i = 0; i < 20; i++) ofType = `{ ofType ${ofType} }`;
  const deep = await post(node.url, { query: `{ __schema { types { fields { type ${ofType} } } } }` });
  assert.equal(deep.status, 400);
  assert.equal(deep.body.errors![0]!.extensions.code, 'EDGE_SYNCMESH_QUERY_TOO_DEEP');
  assert.match(String(deep.body.errors![0]!.extensions['allowed']), /SYNCMESH_MAX_INTROSPECTION_DEPTH/);
  // 60 aliases x types x fields x fields x fields: millions of values from a 2 KB document
  const aliases = Array.from({ length: 60 }, (_, i) => `f${i}: fields { type { fields { type { fields { name } } } } }`).join(' ');
  const bomb = await post(node.url, { query: `{ __schema { types { ${aliases} } } }` });
  assert.equal(bomb.status, 400, JSON.stringify(bomb.body).slice(0, 300));
  assert.equal(bomb.body.errors![0]!.extensions.code, 'EDGE_SYNCMESH_QUERY_TOO_COSTLY');
  assert.ok(bomb.body.errors![0]!.extensions['allowed']);
  // mixed with data fields, the data limits apply to the whole operation
  const mixed = await post(node.url, { query: `{ docEstimate __schema { types { fields { type ${ofType} } } } }` });
  assert.equal(mixed.body.errors![0]!.extensions.code, 'EDGE_SYNCMESH_QUERY_TOO_DEEP');
});

test('introspection - the SDL is served for download at /schema.graphql and /meta-schema.graphql, under the gateway path too', async () => {
  const origin = new URL(node.url).origin;
  for (const [url, schema] of [
    [`${node.url}/schema.graphql`, dataSchema],
    [`${origin}/schema.graphql`, dataSchema],
    [`${node.url}/meta-schema.graphql`, metaSchema],
  ] as const) {
    const res = await fetch(url);
    assert.equal(res.status, 200, url);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(await res.text(), printSchema(schema));
  }
  assert.equal((await fetch(`${node.url}/schema.graphql`, { method: 'POST', body: '{}' })).status, 405);
});
