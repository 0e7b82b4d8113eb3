import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getIntrospectionQuery } from 'graphql';
import { loadConfig } from '../config.js';
import type { SyncmeshRequest } from '../request.js';
import { Preparer } from './prepare.js';
import { dataSchema, metaSchema } from './schema.js';

const config = loadConfig({
  SYNCMESH_NODE_ID: 'unit',
  SYNCMESH_MESH_SECRET_FILE: '/nonexistent/mesh-secret',
  SYNCMESH_WRITE_KEY_FILE: '/nonexistent/write-key',
});
const preparer = new Preparer(config);

const request = (query: string, extra: Partial<SyncmeshRequest> = {}): SyncmeshRequest => ({
  query,
  variables: {},
  operationName: undefined,
  database: 'syncmesh',
  collection: 'sensor_data',
  requestType: 'collect',
  externalNodes: [],
  useMetaData: false,
  radius: undefined,
  mesh: undefined,
  ...extra,
});
const prepare = (query: string, extra: Partial<SyncmeshRequest> = {}) =>
  preparer.prepare(request(query, extra), extra.requestType === 'meta' ? metaSchema : dataSchema);
const refused = (query: string, message: RegExp, extra: Partial<SyncmeshRequest> = {}) =>
  assert.throws(
    () => prepare(query, extra),
    (err: Error & { code?: string; details?: Record<string, unknown> }) => {
      assert.match(err.message, message);
      assert.ok(err.details?.['allowed'], 'names what is allowed');
      return true;
    },
  );
const chain = (levels: number, on = 'Query', leaf = 'docEstimate', root = '{ ...F0 }') =>
  `${root} ${Array.from({ length: levels }, (_, i) => (i < levels - 1 ? `fragment F${i} on ${on} { ...F${i + 1} ...F${i + 1} }` : `fragment F${i} on ${on} { ${leaf} }`)).join(' ')}`;

test('cost - 181 aliased sensors(limit: 100000) are refused by the root field count', () => {
  refused(`{ ${Array.from({ length: 181 }, (_, i) => `a${i}: sensors(limit: 100000) { _id }`).join(' ')} }`, /181 root fields \(aliases count\); at most 20/);
});

test('cost - the limits of all sensors fields are summed; no limit counts as the largest', () => {
  assert.equal(prepare('{ a: sensors(limit: 100000) { _id } b: sensors(limit: 100000) { _id } }').cost.readings, 200_000);
  refused('{ a: sensors(limit: 100000) { _id } b: sensors(limit: 100000) { _id } c: sensors(limit: 1) { _id } }', /200001 readings in total; at most 200000/);
  refused('{ a: sensors { _id } b: sensors { _id } c: sensors { _id } }', /300000 readings/);
  refused('query($n: Int = 100000) { a: sensors(limit: $n) { _id } b: sensors(limit: $n) { _id } c: sensors { _id } }', /300000 readings/);
  assert.equal(prepare('query($n: Int) { a: sensors(limit: $n) { _id } }', { variables: { n: 7 } }).cost.readings, 7);
});

test('cost - aggregate mode counts root fields only: sensors answers one element there', () => {
  const p = prepare('{ a: sensors { _id } b: sensors { _id } c: sensors { _id } }', { requestType: 'aggregate' });
  assert.equal(p.cost.values, 3);
});

test('cost - every selected field counts, aliases and fragments included, times the limit above it', () => {
  const p = prepare(
    '{ sensors(limit: 10) { a: temperature b: temperature ...T ... on Sensor { humidity } } docEstimate } fragment T on Sensor { pressure _id }',
  );
  assert.equal(p.cost.values, 10 * 5 + 1);
  assert.equal(p.cost.depth, 2);
  refused(`{ sensors { ${Array.from({ length: 11 }, (_, i) => `a${i}: temperature`).join(' ')} } }`, /1100000 values.*at most 1000000/);
});

test('cost - a fragment chain is analysed once per fragment and refused by its expanded size', () => {
  // 2^120 paths: a walk that revisits fragments at every spread would never finish
  refused(chain(120), /expands to more than 1e3\d field selections/);
  refused(chain(30, 'Sensor', 'temperature', '{ sensors(limit: 1) { ...F0 } }'), /field selections/);
  assert.equal(prepare(chain(5)).cost.selections, 1 + 2 + 4 + 8 + 16 + 16);
});

test('cost - a fragment that spreads itself is a validation error, not a hang', () => {
  assert.throws(() => prepare('{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }'), /Cannot spread fragment/);
});

test('cost - depth counts through fragments; introspection has its own depth limit', () => {
  assert.throws(() => prepare('{ sensors { a { b { c { d { e { f } } } } } } }'), /query depth 7 exceeds the limit of 6/);
  const standard = prepare(getIntrospectionQuery());
  assert.equal(standard.introspection, true);
  assert.ok(standard.cost.depth > config.maxQueryDepth && standard.cost.depth <= config.maxIntrospectionDepth, `depth ${standard.cost.depth}`);
  assert.ok(standard.cost.values < config.maxAnswerValues, `estimate ${standard.cost.values}`);
  assert.equal(prepare(getIntrospectionQuery(), { requestType: 'meta' }).introspection, true);
  assert.equal(prepare('{ __typename docEstimate }').introspection, false);
  assert.throws(() => prepare('{ docEstimate __schema { types { fields { type { ofType { ofType { name } } } } } } }'), /exceeds the limit of 6/);
});

test('cost - variables nested deeper than any input needs are a 400, however deep', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.throws(
    () => prepare('query($v: Int) { sensors(limit: $v) { _id } }', { variables: { v: deep } }),
    (err: Error & { code?: string }) => err.code === 'EDGE_SYNCMESH_BAD_REQUEST' && /nested more than 32 levels/.test(err.message),
  );
  assert.throws(() => prepare('{ docEstimate }', { variables: { v: { a: { $ne: 1 } } } }), /'\$ne' at variables.v.a/);
});

test('a document over the CPU limit (a cold process) is measured again, warm, at most twice, and refused only when that is over too', () => {
  const LIST = '{ nodes { id address lat lon own_node subscribed } }';
  const meta = (p: Preparer, query = LIST) => p.prepare(request(query, { requestType: 'meta' }), metaSchema);
  // a fresh function on slow hardware: over the limit cold, still over once, then warm
  const limit = config.maxPrepareCpuMs;
  const cold = [limit * 5, limit + 100, 3];
  const warming = new Preparer(config, (work) => {
    work();
    return cold.shift() ?? 3;
  });
  assert.ok(meta(warming).document, 'accepted: the warm measure is within the limit');
  assert.deepEqual(cold, [], 'measured three times');
  // a document that is costly every time: refused with the limit named, then remembered
  let measured = 0;
  const costly = new Preparer(config, (work) => {
    work();
    measured += 1;
    return config.maxPrepareCpuMs + 1;
  });
  for (let i = 0; i < 3; i++) {
    assert.throws(
      () => meta(costly),
      (err: Error & { code?: string }) => err.code === 'EDGE_SYNCMESH_QUERY_TOO_COSTLY' && /SYNCMESH|at most/.test(err.message),
    );
  }
  assert.equal(measured, 3, 'the refusal is remembered: sent again, it is not parsed or validated again');
});
