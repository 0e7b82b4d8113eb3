/**
 * The attack table of issue 27 (findings 1-3): sends each attack on what a query costs to a
 * function process (the build in this checkout, or another build's main.js with --main, to
 * compare before and after a change) and measures, per attack: the answer (status, code, bytes),
 * the time around the request, the CPU the function process spent on it (/proc), how long the
 * node's /healthz took while the attack was being handled, and the process's peak RSS. Each
 * attack gets a fresh process (its peak RSS is the attack's; a walk stuck past --timeout-ms ends
 * with it). For the clients that do not read, the answer is that of one more query sent meanwhile.
 *
 *   make bench-query-cost [BENCH_ARGS="--main path/to/dist/src/main.js --name before"]
 *   node functions/syncmesh/dist/bench/attack-cost.js [--main path/to/dist/src/main.js] [--name after] [--readings 2000]
 *
 * Prints a Markdown table (for the docs) and writes bench-results/query-cost-<name>.json and its
 * PNG (@syncmesh-edge/bench-kit).
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { hostInfo, peakRssMb, pidCpuMs, plotResults, resultsPath, writeResults } from '@syncmesh-edge/bench-kit';
import { MeshKeys, signV2 } from '@syncmesh-edge/mesh-auth';
import { startLocalNode, type LocalNode } from '../testing/node-process.js';

const { values: opts } = parseArgs({
  options: {
    main: { type: 'string' },
    name: { type: 'string', default: 'after' },
    'timeout-ms': { type: 'string', default: '30000' },
    readings: { type: 'string', default: '2000' },
  },
});
const TIMEOUT_MS = Number(opts['timeout-ms']);
const READINGS = Number(opts.readings);
const SECRET = 'attack-cost-mesh-secret-of-32-bytes-or-more';
const WRITE_KEY = 'attack-cost-write-key-0123456789abcdef0123';
const ENV = { SYNCMESH_MESH_SECRET: SECRET, SYNCMESH_WRITE_KEY: WRITE_KEY, SYNCMESH_WRITE_KEY_FILE: '/nonexistent/write-key' };

const chain = (levels: number, on = 'Query', leaf = 'docEstimate', root = '{ ...F0 }') =>
  `${root}\n${Array.from({ length: levels }, (_, i) => (i < levels - 1 ? `fragment F${i} on ${on} { ...F${i + 1} ...F${i + 1} }` : `fragment F${i} on ${on} { ${leaf} }`)).join('\n')}`;
const aliases = (n: number, limit = '') => `{ sensors${limit} { ${Array.from({ length: n }, (_, i) => `a${i}: temperature`).join(' ')} } }`;
const nested = (depth: number) => `{"query":"query($v: Int) { sensors(limit: $v) { _id } }","variables":{"v":${'['.repeat(depth)}1${']'.repeat(depth)}}}`;

interface Attack {
  name: string;
  body: string;
  /** Sent signed, as a forwarded request from another node. */
  forwarded?: boolean;
  /** Clients that send this and never read the answer (the memory case). */
  unreadClients?: number;
}

const ATTACKS: Attack[] = [
  { name: 'fragment chain, 20 levels', body: JSON.stringify({ query: chain(20) }) },
  { name: 'fragment chain, 22 levels', body: JSON.stringify({ query: chain(22) }) },
  { name: 'fragment chain in sensors, 20 levels', body: JSON.stringify({ query: chain(20, 'Sensor', 'temperature', '{ sensors(limit: 10) { ...F0 } }') }) },
  { name: 'fragment chain, 20 levels, forwarded (signed)', body: JSON.stringify({ query: chain(20) }), forwarded: true },
  { name: '600 aliases inside sensors (10 KB)', body: JSON.stringify({ query: aliases(600) }) },
  { name: '400 aliases inside sensors (6.7 KB)', body: JSON.stringify({ query: aliases(400) }) },
  { name: 'variables nested 10,000 deep', body: nested(10_000) },
  { name: 'variables nested 100,000 deep', body: nested(100_000) },
  { name: '8 clients not reading 400 aliases × 2,000 readings', body: JSON.stringify({ query: aliases(400, `(limit: ${READINGS})`) }), unreadClients: 8 },
  // last: on an exponential walk this never ends (the process is then replaced)
  { name: 'fragment chain, 1.7 KB (46 levels)', body: JSON.stringify({ query: chain(46) }) },
];

interface Row {
  attack: string;
  status: number | string;
  code: string;
  bytes: number;
  ms: number;
  cpu_ms: number;
  health_ms: number | null;
  rss_peak_mb: number;
}

async function startNode(): Promise<LocalNode> {
  const node = await startLocalNode('attack', ENV, 160, opts.main);
  const start = Date.parse('2017-07-01T00:00:00Z');
  const sensors = Array.from({ length: READINGS }, (_, i) => ({
    sensor_id: 1,
    lat: 42.6,
    lon: 23.3,
    timestamp: new Date(start + i * 60_000).toISOString(),
    temperature: 20.123456 + (i % 10),
    humidity: 50.5,
    pressure: 93_000.25,
  }));
  const res = await fetch(node.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${WRITE_KEY}` },
    body: JSON.stringify({ query: 'mutation($s: [SensorInput!]!) { addSensors(sensors: $s) }', variables: { s: sensors } }),
  });
  if (res.status !== 200) throw new Error(`loading readings failed: ${res.status} ${await res.text()}`);
  return node;
}

/** Time of a GET /healthz started `delayMs` after the attack (null: no answer within the timeout). */
async function healthDuring(node: LocalNode, delayMs: number): Promise<number | null> {
  await new Promise((r) => setTimeout(r, delayMs));
  const t = performance.now();
  try {
    await fetch(`${new URL(node.url).origin}/healthz`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    return performance.now() - t;
  } catch {
    return null;
  }
}

async function send(node: LocalNode, a: Attack): Promise<{ status: number | string; code: string; bytes: number }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let body = a.body;
  if (a.forwarded) {
    body = JSON.stringify({ ...JSON.parse(a.body), mesh: { request_id: `attack-${Date.now()}`, hop: 1, from: 'attacker' } });
    Object.assign(headers, signV2(new MeshKeys(SECRET), { method: 'POST', path: '/', origin: 'attacker', target: 'attack', body }));
  }
  try {
    const res = await fetch(node.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(TIMEOUT_MS) });
    const text = await res.text();
    const json = JSON.parse(text) as { errors?: Array<{ extensions?: { code?: string } }> };
    return { status: res.status, code: json.errors?.[0]?.extensions?.code ?? '', bytes: Buffer.byteLength(text) };
  } catch {
    return { status: `no answer in ${TIMEOUT_MS / 1000} s`, code: '', bytes: 0 };
  }
}

/** `n` clients send the attack and never read; then one more normal query shows what the node does meanwhile. */
async function unread(node: LocalNode, a: Attack): Promise<{ status: number | string; code: string; bytes: number }> {
  const { port } = new URL(node.url);
  const sockets: Socket[] = [];
  for (let i = 0; i < a.unreadClients!; i++) {
    const s = connect(Number(port), '127.0.0.1');
    await once(s, 'connect');
    s.pause();
    s.write(
      `POST /function/syncmesh-fn HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(a.body)}\r\n\r\n${a.body}`,
    );
    sockets.push(s);
    await new Promise((r) => setTimeout(r, 500));
  }
  const after = await send(node, { name: 'probe', body: JSON.stringify({ query: '{ docEstimate }' }) });
  for (const s of sockets) s.destroy();
  return after;
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const a of ATTACKS) {
    // a fresh process per attack: its peak RSS is this attack's, and a stuck walk ends with it
    const node = await startNode();
    process.stderr.write(`attack: ${a.name} ... `);
    const pid = node.fn.pid!;
    const cpuBefore = pidCpuMs(pid) ?? 0;
    const t = performance.now();
    const health = healthDuring(node, 20);
    const answer = a.unreadClients ? await unread(node, a) : await send(node, a);
    const ms = performance.now() - t;
    const row: Row = {
      attack: a.name,
      ...answer,
      ms: Math.round(ms),
      cpu_ms: Math.round((pidCpuMs(pid) ?? 0) - cpuBefore),
      health_ms: await health.then((h) => (h === null ? null : Math.round(h))),
      rss_peak_mb: Math.round(peakRssMb(pid)),
    };
    rows.push(row);
    process.stderr.write(`${row.status} ${row.code} ${row.bytes} bytes, ${row.ms} ms, ${row.cpu_ms} ms CPU\n`);
    node.fn.kill('SIGKILL');
    await node.stop();
  }
  console.log(`| attack | answer | bytes | time ms | CPU ms | /healthz meanwhile ms | peak RSS MB |`);
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(`| ${r.attack} | ${r.status} ${r.code} | ${r.bytes} | ${r.ms} | ${r.cpu_ms} | ${r.health_ms ?? 'no answer'} | ${r.rss_peak_mb} |`);
  }
  const path = writeResults(resultsPath(`query-cost-${opts.name}`), {
    name: opts.name,
    main: opts.main ?? 'this checkout',
    readings: READINGS,
    host: hostInfo(),
    rows,
  });
  console.log(`\nwritten ${path}, ${plotResults('query-cost', path)}`);
}

await main();
