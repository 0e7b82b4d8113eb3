/**
 * Fuzz test of the function's HTTP endpoint over real sockets (fast-check, seeded, bounded):
 * random methods, paths, headers (content types, encodings, credentials, signature headers),
 * bodies (envelopes with generated GraphQL documents, any JSON, raw bytes, gzip or not, chunked
 * or not, up to past the size cap). Every answer must be a 2xx or 4xx JSON body within the
 * deadline, and the node must still answer a normal query afterwards.
 *
 *   FUZZ_SEED=<n>  reproduce a run (the seed is printed either way)
 *   FUZZ_RUNS=<n>  number of requests (default 300)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { gunzipSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { addNode, MESH_SECRET, post, reading, seed, startNode, WRITE_KEY, type TestNode } from './harness.js';

const SEED = Number(process.env['FUZZ_SEED'] ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 300);
/** The node's SYNCMESH_REQUEST_DEADLINE_MS; an answer must come within it plus transport slack. */
const REQUEST_DEADLINE_MS = 4_000;
const ANSWER_WITHIN_MS = REQUEST_DEADLINE_MS + 2_000;
const MAX_BODY_BYTES = 65_536;

let node: TestNode;
let member: TestNode;

before(async () => {
  [node, member] = await Promise.all([
    startNode('fuzz', { SYNCMESH_MAX_BODY_BYTES: String(MAX_BODY_BYTES), SYNCMESH_REQUEST_DEADLINE_MS: String(REQUEST_DEADLINE_MS) }),
    startNode('fuzz-member'),
  ]);
  await seed(node, [reading('2017-07-10T00:00:00Z', 20, 50, 93000), reading('2017-07-11T00:00:00Z', 21, 51, 93001)]);
  await addNode(node, { id: 'fuzz', address: node.url, lat: 42.6, lon: 23.3, own_node: true });
  await addNode(node, { id: 'fuzz-member', address: member.url, lat: 42.7, lon: 23.3 });
});
after(async () => {
  await Promise.all([node.close(), member.close()]);
});

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/);
const ROOTS = [
  'sensors',
  'sensorsAggregate',
  'sensor',
  'docEstimate',
  'nodes',
  'node',
  'ownNode',
  'addSensors',
  'update',
  'deleteSensor',
  'deleteInTimeRange',
  'addNode',
  'deleteNode',
  '__schema',
  '__typename',
  'bogus',
];
const SUBFIELDS = [
  '_id',
  'sensor_id',
  'temperature',
  'humidity',
  'pressure',
  'timestamp',
  'lat',
  'lon',
  'location',
  'count',
  'average_temperature',
  'max_pressure',
  'sum_humidity',
  'id',
  'address',
  'distance',
  '__typename',
  'nope',
];
const ARGS = ['start_time', 'end_time', 'limit', 'sensor_id', '_id', 'id', 'sensors', 'sensor', 'node', 'radius', 'own_node', 'bogus'];

const argValue: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map(String),
  fc.constantFrom('100000', '100001', '0', '-1', '99999999999999999999', '1e400', '3.5', 'null', 'true', 'ENUM', '$v', '[]', '{}'),
  fc.constantFrom('"2017-07-01T00:00:00Z"', '"2017-07-31T23:59:59"', '"1970-01-01"', '"9999-12-31T23:59:59Z"', '"last tuesday"', '"000000000000000000000000"'),
  fc.string({ maxLength: 20 }).map((s) => JSON.stringify(s)),
  fc.constantFrom(
    '{lat: 1, lon: 1, timestamp: "2017-07-01"}',
    '[{lat: 91, lon: 1, timestamp: "2017-07-01"}]',
    '{ $where: 1 }',
    '{id: "x", address: "http://127.0.0.1:1/", lat: 1, lon: 1}',
  ),
);

const field = fc.record({
  alias: fc.option(name, { nil: undefined }),
  root: fc.constantFrom(...ROOTS),
  args: fc.array(fc.tuple(fc.constantFrom(...ARGS), argValue), { maxLength: 3 }),
  sub: fc.array(fc.constantFrom(...SUBFIELDS), { maxLength: 5 }),
});

const operation = fc.record({
  head: fc.constantFrom('', 'query', 'mutation', 'subscription', 'query Q($v: Int)', 'mutation M($v: DateTime!)', 'query A', 'fragment F on Query'),
  fields: fc.array(field, { maxLength: 30 }),
  tail: fc.constantFrom('', ' query B { docEstimate }', ' fragment F on Query { docEstimate }', ' { ...F }'),
});

const documentText: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: operation.map(
      (o) =>
        `${o.head} { ${o.fields.map((f) => `${f.alias ? `${f.alias}: ` : ''}${f.root}${f.args.length ? `(${f.args.map(([k, v]) => `${k}: ${v}`).join(', ')})` : ''}${f.sub.length ? ` { ${f.sub.join(' ')} }` : ''}`).join(' ')} }${o.tail}`,
    ),
  },
  // damaged documents: cut anywhere, or with random text spliced in
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        operation.map((o) => `${o.head} { ${o.fields.map((f) => f.root).join(' ')} }`),
        fc.nat(),
        fc.string({ maxLength: 10 }),
      )
      .map(([d, at, junk]) => d.slice(0, at % (d.length + 1)) + junk + d.slice(at % (d.length + 1))),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '{ '.repeat(300) + '}'.repeat(300),
      `{ ${'a: docEstimate '.repeat(1500)} }`,
      '{ sensors { _id } }',
      '{ __schema { types { name fields { name } } } }',
    ),
  },
);

const externalNodes = fc.array(
  fc.oneof(
    fc.constantFrom(
      'http://127.0.0.1:1/',
      'http://localhost/',
      'http://169.254.169.254/',
      'http://[::1]:8080/',
      'http://10.255.255.1/',
      'file:///etc/passwd',
      'gopher://x',
      'http://user:pw@127.0.0.1/',
      'not a url',
      '',
    ),
    fc.webUrl(),
    fc.constant('MEMBER'),
    fc.constant('SELF'),
  ),
  { maxLength: 4 },
);

const envelope = fc.record(
  {
    query: documentText,
    variables: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: fc.dictionary(fc.constantFrom('v', 'n', 'e', 's'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 3 }) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    ),
    operationName: fc.oneof(
      { weight: 6, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constantFrom('Q', 'A', 'B', 'M') },
      { weight: 1, arbitrary: fc.oneof(name, fc.integer()) },
    ),
    database: fc.constantFrom(undefined, undefined, undefined, 'syncmesh', 'admin', '$cmd', 42),
    collection: fc.constantFrom(undefined, undefined, undefined, 'sensor_data', 'system.users', 'sensor_data_replicas'),
    request_type: fc.constantFrom(undefined, 'collect', 'aggregate', 'collect', 'aggregate', 'meta', 'sum', null, 3),
    external_nodes: fc.oneof(
      { weight: 3, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: externalNodes },
      { weight: 1, arbitrary: fc.constant('http://127.0.0.1/') },
    ),
    use_meta_data: fc.constantFrom(undefined, undefined, true, false, 'yes'),
    radius: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.double() }, { weight: 1, arbitrary: fc.constant('near') }),
    mesh: fc.oneof(
      { weight: 9, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.record({ request_id: fc.string(), hop: fc.integer(), from: fc.string() }) },
    ),
  },
  { requiredKeys: ['query'] },
);

/** Documents that fit the schemas, with arguments of the right types but any values. */
const isoDate = fc
  .date({ min: new Date('1969-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => JSON.stringify(d.toISOString()));
const intValue = fc.oneof(fc.integer({ min: -5, max: 300_000 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })).map(String);
const floatValue = fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }).map((x) => (String(x).includes('e') ? '1.5' : String(x)));
const SENSOR_FIELDS = ['_id', 'sensor_id', 'location', 'lat', 'lon', 'timestamp', 'temperature', 'humidity', 'pressure'];
const AGG_FIELDS = [
  'count',
  'average_temperature',
  'average_humidity',
  'average_pressure',
  'min_temperature',
  'max_pressure',
  'sum_temperature',
  'sum_humidity',
];
const subset = (fields: string[]) => fc.subarray(fields, { minLength: 1 }).map((xs) => `{ ${xs.join(' ')} }`);
const timeArgs = fc.record({ start_time: isoDate, end_time: isoDate, sensor_id: intValue }, { requiredKeys: [] });
const args = (o: Record<string, string | undefined>) => {
  const parts = Object.entries(o)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}: ${v}`);
  return parts.length ? `(${parts.join(', ')})` : '';
};
const reading_ = fc
  .record({ lat: floatValue, lon: floatValue, timestamp: isoDate, temperature: floatValue })
  .map((r) => `{lat: ${r.lat}, lon: ${r.lon}, timestamp: ${r.timestamp}, temperature: ${r.temperature}}`);
const dataQueryField = fc.oneof(
  fc.tuple(timeArgs, fc.option(intValue, { nil: undefined }), subset(SENSOR_FIELDS)).map(([t, limit, sel]) => `sensors${args({ ...t, limit })} ${sel}`),
  fc.tuple(timeArgs, subset(AGG_FIELDS)).map(([t, sel]) => `sensorsAggregate${args(t)} ${sel}`),
  fc.string({ maxLength: 30 }).map((id) => `sensor(_id: ${JSON.stringify(id)}) { _id temperature }`),
  fc.constant('docEstimate'),
  fc.constant('__typename'),
);
const dataMutationField = fc.oneof(
  fc.array(reading_, { maxLength: 3 }).map((rs) => `addSensors(sensors: [${rs.join(', ')}])`),
  fc.tuple(fc.stringMatching(/^[0-9a-f]{24}$/), floatValue).map(([id, t]) => `update(_id: "${id}", sensor: {temperature: ${t}}) { _id }`),
  fc.stringMatching(/^[0-9a-f]{24}$/).map((id) => `deleteSensor(_id: "${id}") { _id }`),
  fc.tuple(isoDate, isoDate).map(([a, b]) => `deleteInTimeRange(start_time: ${a}, end_time: ${b})`),
);
const metaField = fc.oneof(
  fc.option(floatValue, { nil: undefined }).map((r) => `nodes${args({ radius: r })} { id address distance own_node }`),
  fc.constantFrom('ownNode { id lat lon }', 'node(id: "fuzz-member") { address }', 'node(id: "nope") { id }'),
);
const aliased = (f: fc.Arbitrary<string>, max: number) =>
  fc
    .array(fc.tuple(fc.option(name, { nil: undefined }), f), { minLength: 1, maxLength: max })
    .map((xs) => xs.map(([al, x], i) => `${al ? `${al}${i}: ` : ''}${x}`).join(' '));
const schemaEnvelope = fc.oneof(
  fc
    .tuple(aliased(dataQueryField, 25), fc.constantFrom('collect', 'aggregate'), fc.array(fc.constantFrom('MEMBER', 'http://10.255.255.1/'), { maxLength: 1 }))
    .map(([f, rt, ext]) => ({ query: `{ ${f} }`, request_type: rt, external_nodes: ext })),
  aliased(dataMutationField, 3).map((f) => ({ query: `mutation { ${f} }` })),
  aliased(metaField, 3).map((f) => ({ query: `{ ${f} }`, request_type: 'meta' })),
);

/** An envelope whose fields all have the right types, so that the document is what gets tested. */
const cleanEnvelope = fc.record(
  {
    query: documentText,
    variables: fc.dictionary(
      fc.constantFrom('v', 'n', 'e', 's'),
      fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant('2017-07-01T00:00:00Z'), fc.constant(null)),
      { maxKeys: 2 },
    ),
    request_type: fc.constantFrom('collect', 'aggregate', 'meta'),
    external_nodes: fc.array(fc.constantFrom('MEMBER', 'http://10.255.255.1/', 'http://127.0.0.1:1/'), { maxLength: 2 }),
    use_meta_data: fc.boolean(),
  },
  { requiredKeys: ['query'] },
);

const body: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 10, arbitrary: schemaEnvelope.map((e) => Buffer.from(JSON.stringify(e).replaceAll('"MEMBER"', JSON.stringify(member.url)))) },
  { weight: 8, arbitrary: cleanEnvelope.map((e) => Buffer.from(JSON.stringify(e).replaceAll('"MEMBER"', JSON.stringify(member.url)))) },
  {
    weight: 6,
    arbitrary: envelope.map((e) =>
      Buffer.from(JSON.stringify(e).replaceAll('"MEMBER"', JSON.stringify(member.url)).replaceAll('"SELF"', JSON.stringify(node.url))),
    ),
  },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b)) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: MAX_BODY_BYTES - 64, max: MAX_BODY_BYTES * 3 })
      .map((n) => Buffer.from(JSON.stringify({ query: '{ docEstimate }', pad: 'x'.repeat(n) }))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.alloc(0),
      Buffer.from('{"query": "{ docEstimate }"'),
      Buffer.from('\uFEFF{"query":"{ docEstimate }"}'),
      Buffer.from([0xff, 0xfe, 0x00]),
    ),
  },
);

const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,40}$/).map((s) => s.trim());
const request_ = fc.record({
  method: fc.oneof(
    { weight: 9, arbitrary: fc.constant('POST') },
    { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'HEAD') },
  ),
  path: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('/', '/function/syncmesh-fn', '/function/syncmesh-fn/', '/?x=1') },
    { weight: 2, arbitrary: fc.constantFrom('/function/other', '/events', '/replicate', '/resync', '/healthz', '/readyz', '/%00', '/..%2f..%2fetc', '//') },
  ),
  contentType: fc.constantFrom(undefined, 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1'),
  // mostly a body that matches its content-encoding, sometimes one that does not
  encoding: fc.oneof(
    { weight: 6, arbitrary: fc.constant({ header: undefined as string | undefined, gzip: false }) },
    { weight: 2, arbitrary: fc.constantFrom({ header: 'gzip', gzip: true }, { header: 'GZIP', gzip: true }, { header: 'identity', gzip: false }) },
    { weight: 1, arbitrary: fc.record({ header: fc.constantFrom(undefined, 'gzip', 'br', 'deflate', 'gzip, gzip', 'x'), gzip: fc.boolean() }) },
  ),
  chunked: fc.boolean(),
  acceptGzip: fc.boolean(),
  authorization: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.constant(`Bearer ${WRITE_KEY}`) },
    { weight: 1, arbitrary: headerValue.map((v) => `Bearer ${v}`) },
    { weight: 1, arbitrary: headerValue },
  ),
  signature: fc.oneof(
    { weight: 18, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc.record({
        'x-syncmesh-timestamp': fc.oneof(fc.constant(String(Date.now())), headerValue),
        'x-syncmesh-signature': fc.oneof(
          headerValue,
          headerValue.map((v) => `v1=${v}`),
          headerValue.map((v) => `v2=${v}`),
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        'x-syncmesh-origin': headerValue,
        'x-syncmesh-target': fc.constantFrom('fuzz', 'other'),
        'x-syncmesh-nonce': headerValue,
        'x-syncmesh-timestamp': headerValue,
        'x-syncmesh-signature': headerValue,
      }),
    },
  ),
  body,
});

type Sent = typeof request_ extends fc.Arbitrary<infer T> ? T : never;

interface Received {
  status: number;
  contentType: string;
  text: string;
  ms: number;
}

/** Sends one request over a fresh socket and reads the whole answer. */
function send(r: Sent): Promise<Received> {
  const url = new URL(node.url);
  const payload = r.encoding.gzip ? gzipSync(r.body) : r.body;
  const headers: Record<string, string> = {};
  if (r.contentType) headers['content-type'] = r.contentType;
  if (r.encoding.header) headers['content-encoding'] = r.encoding.header;
  if (r.acceptGzip) headers['accept-encoding'] = 'gzip';
  if (r.authorization !== undefined) headers['authorization'] = r.authorization;
  if (r.signature) Object.assign(headers, r.signature);
  const hasBody = r.method !== 'GET' && r.method !== 'HEAD';
  // Framed either way; an unframed body would be a second, garbage request on the socket (an
  // HTTP parse error that node:http answers itself, before the function sees anything).
  if (hasBody) headers[r.chunked ? 'transfer-encoding' : 'content-length'] = r.chunked ? 'chunked' : String(payload.length);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method: r.method, path: r.path, headers, agent: false, signal: AbortSignal.timeout(ANSWER_WITHIN_MS + 5_000) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          let raw = Buffer.concat(chunks);
          if (res.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            text: raw.toString('utf8'),
            ms: performance.now() - started,
          });
        });
      },
    );
    // The server may answer (413/400) and close before the whole body is written.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    if (hasBody) req.end(payload);
    else req.end();
  });
}

test('fuzz - every answer of the HTTP endpoint is a 2xx/4xx JSON within the deadline, and the node still answers', async (t) => {
  t.diagnostic(`fuzz: seed ${SEED}, ${RUNS} requests (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} to reproduce)`);
  const codes = new Map<string, number>();
  const started = performance.now();
  const statuses = new Map<number, number>();
  let slowest = 0;
  await fc.assert(
    fc.asyncProperty(request_, async (r) => {
      const got = await send(r);
      statuses.set(got.status, (statuses.get(got.status) ?? 0) + 1);
      slowest = Math.max(slowest, got.ms);
      const what = `${r.method} ${r.path} -> ${got.status} ${got.text.slice(0, 300)}`;
      assert.ok((got.status >= 200 && got.status < 300) || (got.status >= 400 && got.status < 500), what);
      assert.ok(got.ms < ANSWER_WITHIN_MS, `${what}: took ${Math.round(got.ms)} ms`);
      if (r.method === 'HEAD') return; // no body by definition
      assert.match(got.contentType, /^application\/json/, what);
      const json = JSON.parse(got.text) as { errors?: Array<{ message: unknown; extensions?: { code?: unknown } }> };
      if (got.status >= 400) {
        assert.ok(Array.isArray(json.errors) && json.errors.length > 0, what);
        const c = String(json.errors[0]!.extensions?.code);
        codes.set(c, (codes.get(c) ?? 0) + 1);
        assert.match(String(json.errors[0]!.extensions?.code), /^EDGE_[A-Z_]+$/, what);
        assert.equal(typeof json.errors[0]!.message, 'string', what);
      }
      assert.ok(!got.text.includes(MESH_SECRET) && !got.text.includes(WRITE_KEY), `${what}: a secret in the answer`);
    }),
    {
      seed: SEED,
      numRuns: RUNS,
      endOnFailure: true,
      reporter: (out) => {
        if (out.failed) throw new Error(`${fc.defaultReportMessage(out)}\n${String((out.errorInstance as Error | undefined)?.message ?? '')}`);
      },
    },
  );
  const seconds = (performance.now() - started) / 1000;
  t.diagnostic(
    `fuzz: ${RUNS} requests in ${seconds.toFixed(1)} s, slowest ${Math.round(slowest)} ms, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
  );
  t.diagnostic(`fuzz: error codes ${JSON.stringify(Object.fromEntries([...codes].sort((x, y) => y[1] - x[1])))}`);

  const normal = await post(node.url, {
    query: '{ sensorsAggregate(start_time: "2017-07-10T00:00:00Z", end_time: "2017-07-11T00:00:00Z") { count } }',
    external_nodes: [member.url],
  });
  assert.equal(normal.status, 200, JSON.stringify(normal.body));
  assert.equal(typeof normal.body.data!['sensorsAggregate'].count, 'number');
  assert.equal((await fetch(`${node.url}/healthz`)).status, 200);
});
