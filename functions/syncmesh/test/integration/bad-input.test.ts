import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { post, startNode, type TestNode } from './harness.js';

let node: TestNode;

before(async () => {
  node = await startNode('bad', { SYNCMESH_MAX_BODY_BYTES: '65536', SYNCMESH_MAX_LIMIT: '1000' });
});
after(() => node.close());

interface Case {
  name: string;
  body: unknown;
  headers?: Record<string, string>;
  status: number;
  code: string;
  message: RegExp;
  allowed?: boolean;
}

const q = (query: string, extra: Record<string, unknown> = {}) => ({ query, ...extra });

const CASES: Case[] = [
  { name: 'malformed JSON', body: '{"query": ', status: 400, code: 'EDGE_SYNCMESH_BAD_JSON', message: /not valid JSON/, allowed: true },
  { name: 'body is an array', body: '[1,2]', status: 400, code: 'EDGE_SYNCMESH_BAD_REQUEST', message: /must be a JSON object/, allowed: true },
  { name: 'query missing', body: { request_type: 'collect' }, status: 400, code: 'EDGE_SYNCMESH_BAD_REQUEST', message: /query/ },
  { name: 'query not a string', body: { query: 42 }, status: 400, code: 'EDGE_SYNCMESH_BAD_REQUEST', message: /query/ },
  {
    name: 'unknown request_type',
    body: q('{ docEstimate }', { request_type: 'sum' }),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_REQUEST_TYPE',
    message: /unknown request_type 'sum'/,
    allowed: true,
  },
  { name: 'GraphQL syntax error', body: q('{ sensors { temperature }'), status: 400, code: 'EDGE_SYNCMESH_GRAPHQL_SYNTAX', message: /GraphQL syntax error/ },
  { name: 'unknown field', body: q('{ sensors { colour } }'), status: 400, code: 'EDGE_SYNCMESH_GRAPHQL_VALIDATION', message: /Cannot query field "colour"/ },
  {
    name: 'wrong argument type',
    body: q('{ sensors(limit: "ten") { _id } }'),
    status: 400,
    code: 'EDGE_SYNCMESH_GRAPHQL_VALIDATION',
    message: /Int cannot represent/,
  },
  {
    name: 'limit below 0',
    body: q('{ sensors(limit: -1) { _id } }'),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ARGUMENT',
    message: /limit -1 is out of range/,
    allowed: true,
  },
  {
    name: 'limit above the cap',
    body: q('{ sensors(limit: 1001) { _id } }'),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ARGUMENT',
    message: /limit 1001 is out of range/,
    allowed: true,
  },
  {
    name: 'limit above the cap through a variable',
    body: q('query($n: Int) { sensors(limit: $n) { _id } }', { variables: { n: 5000 } }),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ARGUMENT',
    message: /limit 5000/,
  },
  {
    name: 'radius below 0',
    body: q('{ docEstimate }', { radius: -5, use_meta_data: true }),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_REQUEST',
    message: /radius must be a number of km >= 0/,
    allowed: true,
  },
  { name: 'radius not a number', body: q('{ docEstimate }', { radius: 'near' }), status: 400, code: 'EDGE_SYNCMESH_BAD_REQUEST', message: /radius/ },
  {
    name: 'start after end',
    body: q('{ sensorsAggregate(start_time: "2017-07-31T00:00:00Z", end_time: "2017-07-01T00:00:00Z") { count } }'),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ARGUMENT',
    message: /start_time 2017-07-31T00:00:00.000Z is after end_time/,
    allowed: true,
  },
  {
    name: 'not a date',
    body: q('{ sensors(start_time: "last tuesday") { _id } }'),
    status: 400,
    code: 'EDGE_SYNCMESH_GRAPHQL_VALIDATION',
    message: /'last tuesday' is not an ISO-8601 date-time/,
  },
  ...(
    [
      ['database', 'admin'],
      ['collection', 'system.users'],
    ] as const
  ).map(([target, value]) => ({
    name: `${target} outside the allow-list`,
    body: q('{ docEstimate }', { [target]: value }),
    status: 400,
    code: 'EDGE_SYNCMESH_NOT_ALLOWED_TARGET',
    message: new RegExp(`${target} '${value.replace('.', '\\.')}' is not allowed`),
    allowed: true,
  })),
  {
    name: 'query too deep',
    body: q('{ sensors { a { b { c { d { e { f } } } } } } }'),
    status: 400,
    code: 'EDGE_SYNCMESH_QUERY_TOO_DEEP',
    message: /query depth 7 exceeds the limit of 6/,
    allowed: true,
  },
  {
    name: 'MongoDB operator in variables',
    body: q('query($id: ID!) { sensor(_id: $id) { _id } }', { variables: { id: { $ne: null } } }),
    status: 400,
    code: 'EDGE_SYNCMESH_OPERATOR_INJECTION',
    message: /MongoDB operators are not accepted in inputs: '\$ne' at variables.id/,
    allowed: true,
  },
  {
    name: 'MongoDB operator in an input object',
    body: q('mutation($s: [SensorInput!]!) { addSensors(sensors: $s) }', {
      variables: { s: [{ lat: 1, lon: 1, timestamp: '2017-07-01', $where: 'sleep(1000)' }] },
    }),
    status: 400,
    code: 'EDGE_SYNCMESH_OPERATOR_INJECTION',
    message: /'\$where' at variables.s\[0\]/,
  },
  {
    name: 'external node not a URL',
    body: q('{ docEstimate }', { external_nodes: ['file:///etc/passwd'] }),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_REQUEST',
    message: /is not an http\(s\) URL/,
    allowed: true,
  },
  {
    name: 'variable of the wrong type',
    body: q('query($n: Int) { sensors(limit: $n) { _id } }', { variables: { n: 'many' } }),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ARGUMENT',
    message: /Variable "\$n" got invalid value "many"/,
  },
  {
    name: 'body over the size cap',
    body: JSON.stringify({ query: `{ docEstimate }`, pad: 'x'.repeat(70_000) }),
    status: 413,
    code: 'EDGE_SYNCMESH_BODY_TOO_LARGE',
    message: /larger than 65536 bytes/,
    allowed: true,
  },
  {
    name: 'unsupported content-encoding',
    body: '{}',
    headers: { 'content-encoding': 'br' },
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ENCODING',
    message: /content-encoding 'br' is not supported/,
    allowed: true,
  },
  {
    name: 'two operations without operationName',
    body: q('query A { docEstimate } query B { docEstimate }'),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_REQUEST',
    message: /several operations; name one with operationName/,
  },
  {
    name: 'radius without an own node',
    body: q('{ docEstimate }', { use_meta_data: true, radius: 10 }),
    status: 400,
    code: 'EDGE_SYNCMESH_NO_OWN_NODE',
    message: /registry has no own node/,
  },
  {
    name: 'coordinates out of range',
    body: q('mutation { addSensors(sensors: [{lat: 1, lon: 2, timestamp: "2017-07-01"}, {lat: 91, lon: 2, timestamp: "2017-07-01"}]) }'),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ARGUMENT',
    message: /sensors\[1\]: lat 91 is out of range/,
    allowed: true,
  },
  {
    name: 'update with no fields',
    body: q('mutation { update(_id: "000000000000000000000000", sensor: {}) { _id } }'),
    status: 400,
    code: 'EDGE_SYNCMESH_BAD_ARGUMENT',
    message: /update needs at least one field/,
    allowed: true,
  },
];

for (const c of CASES) {
  test(`bad input - ${c.name}`, async () => {
    // with the write key: these are about validation, not credentials (attack-surface.test.ts)
    const r = await post(node.url, c.body, { write: true, ...(c.headers ? { headers: c.headers } : {}) });
    assert.equal(r.status, c.status, JSON.stringify(r.body));
    const err = r.body.errors?.[0];
    assert.ok(err, 'an error object is returned');
    assert.equal(err.extensions.code, c.code);
    assert.match(err.message, c.message);
    if (c.allowed) assert.ok(err.extensions['allowed'] !== undefined, 'the answer says what is allowed');
    assert.equal(r.body.data, undefined, 'nothing is executed');
  });
}

test('bad input - a gzip bomb is stopped at the size cap', async () => {
  const bomb = gzipSync(Buffer.alloc(10_000_000, 0x20));
  const res = await fetch(node.url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: bomb });
  assert.equal(res.status, 413);
  const body = (await res.json()) as { errors: Array<{ extensions: { code: string } }> };
  assert.equal(body.errors[0]!.extensions.code, 'EDGE_SYNCMESH_BODY_TOO_LARGE');
});

test('bad input - wrong method and unknown path', async () => {
  const get = await fetch(node.url);
  assert.equal(get.status, 405);
  const nowhere = await fetch(`${node.url}/nowhere`, { method: 'POST', body: '{}' });
  assert.equal(nowhere.status, 404);
});

test('bad input - the process keeps serving after every bad request', async () => {
  const r = await post(node.url, { query: '{ docEstimate }' });
  assert.equal(r.status, 200);
});

test('bad input - malformed HTTP gets the JSON error shape, not a bare 400', async () => {
  const { port, hostname } = new URL(node.url);
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write('POST / HTTP/1.1\r\nHost: x\r\nBad Header Without Colon\r\n\r\n'));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  assert.match(raw, /^HTTP\/1\.1 400 Bad Request\r\n/);
  const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { errors: { extensions: { code: string } }[] };
  assert.equal(body.errors[0]!.extensions.code, 'EDGE_SYNCMESH_BAD_REQUEST');
});
