/**
 * Property-based test of what a request costs (issue 27; fast-check, seeded): GraphQL documents
 * generated from the data schema (every Query field with arguments of its types, literal or
 * variables, aliases, named fragments spread once, twice or in chains, inline fragments,
 * @include/@skip, introspection fields, sometimes variables nested deep) are sent to a node running
 * as its own process, with a second node as member for forwarded requests. For every request:
 *
 * - the CPU time both processes spent on it (/proc/<pid>/stat, around the request) is at most
 *   CPU_BOUND_MS;
 * - the answer is at most ANSWER_BOUND_BYTES, and a 200 answer holds no more values than its
 *   `extensions.cost.values` estimate, which is at most SYNCMESH_MAX_ANSWER_VALUES;
 * - the answer is a 2xx or 4xx JSON (a 503 BUSY only with its code), never a 500.
 *
 *   FUZZ_COST_SEED=<n>  reproduce a run (the seed is printed either way)
 *   FUZZ_COST_RUNS=<n>  number of requests (default 150; make test-fuzz-cost-extensive: 3000)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { getNamedType, isLeafType, isObjectType, type GraphQLField, type GraphQLObjectType } from 'graphql';
import { pidCpuMs } from '@syncmesh-edge/bench-kit';
import { startLocalNode, type LocalNode } from '../../testing/node-process.js';
import { dataSchema } from '../../src/graphql/schema.js';
import { MESH_SECRET, post, WRITE_KEY, type Answer } from './harness.js';

const SEED = Number(process.env['FUZZ_COST_SEED'] ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env['FUZZ_COST_RUNS'] ?? 150);
/** Readings on the entry node and the member: more than SYNCMESH_MAX_LIMIT, so that limits bite. */
const READINGS = 600;
const MAX_LIMIT = 500;
const MAX_ANSWER_VALUES = 20_000;
/**
 * CPU both processes may spend on one request: the cost limits bound parsing, analysis and
 * validation to a few ms and execution to MAX_ANSWER_VALUES values (measured: under 60 ms at
 * load 15); /proc counts in 10 ms ticks, and other work of the processes (timers, the driver's
 * heartbeats) lands in the same window.
 */
const CPU_BOUND_MS = 400;
/** Every value of this schema serialises to at most ~40 bytes with its key; plus the envelope. */
const ANSWER_BOUND_BYTES = MAX_ANSWER_VALUES * 48 + 16_384;

const ENV = {
  SYNCMESH_MESH_SECRET: MESH_SECRET,
  SYNCMESH_WRITE_KEY: WRITE_KEY,
  SYNCMESH_WRITE_KEY_FILE: '/nonexistent/syncmesh-test/write-key',
  SYNCMESH_MAX_LIMIT: String(MAX_LIMIT),
  SYNCMESH_MAX_TOTAL_LIMIT: String(2 * MAX_LIMIT),
  SYNCMESH_MAX_ANSWER_VALUES: String(MAX_ANSWER_VALUES),
  // below CPU_BOUND_MS: a document the CPU limit refuses is measured up to 3 times
  SYNCMESH_MAX_PREPARE_CPU_MS: '100',
  SYNCMESH_NODE_TIMEOUT_MS: '3000',
  SYNCMESH_DEADLINE_MS: '3000',
};

let entry: LocalNode;
let member: LocalNode;

async function load(node: LocalNode): Promise<void> {
  const start = Date.parse('2017-07-01T00:00:00Z');
  const sensors = Array.from({ length: READINGS }, (_, i) => ({
    sensor_id: 1 + (i % 3),
    lat: 42.6,
    lon: 23.3,
    timestamp: new Date(start + i * 600_000).toISOString(),
    temperature: 20 + (i % 17) / 3,
    humidity: 40 + (i % 11),
    pressure: 93_000 + i,
  }));
  const r = await post(node.url, { query: 'mutation($s: [SensorInput!]!) { addSensors(sensors: $s) }', variables: { s: sensors } }, { write: true });
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
}

const meta = (node: LocalNode, query: string) => post(node.url, { request_type: 'meta', query }, { sign: true, target: node.id });

before(async () => {
  [entry, member] = await Promise.all([
    startLocalNode('fuzz-cost', { ...ENV, SYNCMESH_DATABASES: 'syncmesh_fuzz_cost' }),
    startLocalNode('fuzz-cost-member', { ...ENV, SYNCMESH_DATABASES: 'syncmesh_fuzz_cost_member' }),
  ]);
  await Promise.all([load(entry), load(member)]);
  for (const [id, node, own] of [
    ['fuzz-cost', entry, true],
    ['fuzz-cost-member', member, false],
  ] as const) {
    const r = await meta(entry, `mutation { addNode(node: {id: "${id}", address: "${node.url}", lat: 42.6, lon: 23.3, own_node: ${own}}) { id } }`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
});
after(async () => {
  await Promise.all([entry?.stop(), member?.stop()]);
});

// ---------------------------------------------------------------------------------------------
// Documents from the schema
// ---------------------------------------------------------------------------------------------

const alias = fc.option(fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/), { nil: undefined, freq: 2 });
const directive = fc.constantFrom('', '', '', '', ' @include(if: $b)', ' @skip(if: $b)', ' @include(if: true)', ' @skip(if: false)');
const isoDate = fc
  .date({ min: new Date('2017-06-25T00:00:00Z'), max: new Date('2017-07-10T00:00:00Z'), noInvalidDate: true })
  .map((d) => `"${d.toISOString()}"`);

/** A literal or a variable for an argument of the given type (the variables are declared on every operation). */
function argValue(typeName: string): fc.Arbitrary<string> {
  switch (typeName) {
    case 'Int':
      return fc.oneof(
        fc.integer({ min: 0, max: 40 }).map(String),
        fc.integer({ min: 100, max: MAX_LIMIT }).map(String),
        fc.constantFrom('1', String(MAX_LIMIT), '$lim', '$lim'),
        fc.integer().map(String),
      );
    case 'DateTime':
      return fc.oneof(isoDate, fc.constantFrom('$from'));
    case 'ID':
      return fc.constantFrom('"000000000000000000000000"', '"x"');
    default:
      return fc.constant('null');
  }
}

/** Arguments of a field from its definition: each optional one sometimes, required ones always. */
function argsFor(field: GraphQLField<unknown, unknown>): fc.Arbitrary<string> {
  if (field.args.length === 0) return fc.constant('');
  return fc
    .tuple(
      ...field.args.map((a) =>
        String(a.type).endsWith('!')
          ? argValue(getNamedType(a.type).name).map((v) => `${a.name}: ${v}`)
          : fc.option(
              argValue(getNamedType(a.type).name).map((v) => `${a.name}: ${v}`),
              { nil: '' },
            ),
      ),
    )
    .map((parts) => {
      const given = parts.filter((p) => p !== '');
      return given.length ? `(${given.join(', ')})` : '';
    });
}

const leavesOf = (type: GraphQLObjectType) => Object.values(type.getFields()).filter((f) => isLeafType(getNamedType(f.type)));

/** Leaf selections of an object type, with aliases and directives; sometimes a lot of them. */
function leafSelections(type: GraphQLObjectType): fc.Arbitrary<string> {
  const one = fc.tuple(alias, fc.constantFrom(...leavesOf(type).map((f) => f.name)), directive).map(([al, f, d]) => `${al ? `${al}: ` : ''}${f}${d}`);
  return fc
    .oneof({ weight: 4, arbitrary: fc.array(one, { minLength: 1, maxLength: 6 }) }, { weight: 1, arbitrary: fc.array(one, { minLength: 1, maxLength: 80 }) })
    .map((xs) => xs.join(' '));
}

interface Doc {
  selection: string;
  fragments: string[];
}

/** The selection under an object type: leaves, an inline fragment, a named fragment spread once or twice, or a fragment chain. */
function objectSelection(type: GraphQLObjectType, tag: string): fc.Arbitrary<Doc> {
  return fc.oneof(
    { weight: 4, arbitrary: leafSelections(type).map((s) => ({ selection: s, fragments: [] })) },
    { weight: 1, arbitrary: leafSelections(type).map((s) => ({ selection: `... on ${type.name} { ${s} }`, fragments: [] })) },
    {
      weight: 2,
      arbitrary: fc.tuple(leafSelections(type), fc.integer({ min: 1, max: 2 }), directive).map(([s, times, d]) => ({
        selection: Array.from({ length: times }, () => `...${tag}${d}`).join(' '),
        fragments: [`fragment ${tag} on ${type.name} { ${s} }`],
      })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(leafSelections(type), fc.integer({ min: 2, max: 30 })).map(([s, levels]) => ({
        selection: `...${tag}0`,
        fragments: Array.from({ length: levels }, (_, i) =>
          i < levels - 1 ? `fragment ${tag}${i} on ${type.name} { ...${tag}${i + 1} ...${tag}${i + 1} }` : `fragment ${tag}${i} on ${type.name} { ${s} }`,
        ),
      })),
    },
  );
}

const queryType = dataSchema.getQueryType()!;

/** One root field of Query with its arguments and selection; `n` keeps fragment names apart. */
function rootField(n: number): fc.Arbitrary<Doc> {
  const fields = Object.values(queryType.getFields()).map((field) => {
    const named = getNamedType(field.type);
    const sub = isObjectType(named) ? objectSelection(named, `F${n}x`) : fc.constant<Doc>({ selection: '', fragments: [] });
    return fc.tuple(alias, argsFor(field), sub).map(([al, args, s]) => ({
      selection: `${al ? `${al}: ` : ''}${field.name}${args}${s.selection ? ` { ${s.selection} }` : ''}`,
      fragments: s.fragments,
    }));
  });
  const introspection = fc.constantFrom<Doc>(
    { selection: '__typename', fragments: [] },
    { selection: '__schema { queryType { name } types { name kind } }', fragments: [] },
    { selection: '__type(name: "Sensor") { fields { name type { name kind ofType { name } } } }', fragments: [] },
  );
  return fc.oneof({ weight: 8, arbitrary: fc.oneof(...fields) }, { weight: 1, arbitrary: introspection });
}

const VARIABLES = { lim: 'Int', from: 'DateTime', b: 'Boolean = true' };

const operation = fc.integer({ min: 1, max: 6 }).chain((count) =>
  fc.tuple(...Array.from({ length: count }, (_, i) => rootField(i))).map((docs) => {
    const selection = docs.map((d) => d.selection).join(' ');
    const fragments = docs.flatMap((d) => d.fragments).join(' ');
    // declared when used (an unused variable is a validation error)
    const declared = Object.entries(VARIABLES)
      .filter(([name]) => `${selection} ${fragments}`.includes(`$${name}`))
      .map(([name, type]) => `$${name}: ${type}`);
    return `query Q${declared.length ? `(${declared.join(', ')})` : ''} { ${selection} } ${fragments}`;
  }),
);

const variables = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      { lim: fc.oneof(fc.integer({ min: 0, max: MAX_LIMIT }), fc.integer()), from: isoDate.map((s) => JSON.parse(s) as string), b: fc.boolean() },
      { requiredKeys: [] },
    ),
  },
  // nested arrays this deep, written into the body as text (see bodyText)
  { weight: 1, arbitrary: fc.integer({ min: 20, max: 100_000 }).map((depth) => ({ nestedDepth: depth })) },
);

const request = fc.record({
  query: operation,
  variables,
  request_type: fc.constantFrom('collect', 'collect', 'aggregate'),
  forward: fc.boolean(),
});

/** The request body; nested variables are written as text (no recursive stringify on the client either). */
function bodyText(r: typeof request extends fc.Arbitrary<infer T> ? T : never): string {
  const body = { query: r.query, request_type: r.request_type, ...(r.forward ? { external_nodes: [member.url] } : {}) };
  const depth = 'nestedDepth' in r.variables ? (r.variables.nestedDepth as number) : undefined;
  const variables = depth === undefined ? JSON.stringify(r.variables) : `{"deep":${'['.repeat(depth)}1${']'.repeat(depth)}}`;
  return `${JSON.stringify(body).slice(0, -1)},"variables":${variables}}`;
}

/** Leaf values of an answer's data (null and scalars count one each). */
function countValues(data: unknown): number {
  let n = 0;
  const stack: unknown[] = [data];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (v !== null && typeof v === 'object') stack.push(...Object.values(v));
    else n++;
  }
  return n;
}

test('fuzz cost - every generated document costs both nodes at most CPU_BOUND_MS and answers within its estimate and the size bound', async (t) => {
  t.diagnostic(`fuzz cost: seed ${SEED}, ${RUNS} requests (FUZZ_COST_SEED=${SEED} FUZZ_COST_RUNS=${RUNS} to reproduce)`);
  const pids = [entry.fn.pid!, member.fn.pid!];
  const cpu = () => pids.reduce((s, p) => s + (pidCpuMs(p) ?? 0), 0);
  const statuses = new Map<string, number>();
  let worstCpu = 0;
  let worstBytes = 0;
  let mostValues = 0;
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const before = cpu();
      const res = await fetch(entry.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: bodyText(r),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await res.text();
      const used = cpu() - before;
      const bytes = Buffer.byteLength(text);
      const json = JSON.parse(text) as Answer['body'];
      const key = `${res.status} ${json.errors?.[0]?.extensions.code ?? ''}`.trim();
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      worstCpu = Math.max(worstCpu, used);
      worstBytes = Math.max(worstBytes, bytes);
      const what = `${key} for ${r.query.slice(0, 300)}`;
      assert.ok((res.status >= 200 && res.status < 300) || (res.status >= 400 && res.status < 500) || key === '503 EDGE_SYNCMESH_BUSY', what);
      assert.ok(used <= CPU_BOUND_MS, `${what}: ${used} ms of CPU`);
      assert.ok(bytes <= ANSWER_BOUND_BYTES, `${what}: ${bytes} bytes`);
      if (res.status === 200) {
        const cost = json.extensions!['cost'] as { values: number };
        const values = countValues(json.data);
        mostValues = Math.max(mostValues, values);
        assert.ok(values <= cost.values, `${what}: ${values} values, estimated ${cost.values}`);
        assert.ok(cost.values <= MAX_ANSWER_VALUES, `${what}: estimate ${cost.values}`);
      }
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
  t.diagnostic(
    `fuzz cost: worst CPU ${Math.round(worstCpu)} ms (bound ${CPU_BOUND_MS}), largest answer ${worstBytes} bytes (bound ${ANSWER_BOUND_BYTES}), most values ${mostValues} (budget ${MAX_ANSWER_VALUES})`,
  );
  t.diagnostic(`fuzz cost: outcomes ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => b[1] - a[1])))}`);
  const health = await fetch(`${entry.url.replace(/\/function\/.*$/, '')}/healthz`);
  assert.equal(health.status, 200);
});
