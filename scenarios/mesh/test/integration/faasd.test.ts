/**
 * A 3-node mesh on real faasd (MESH_RUNTIME=faasd): every node is containerd + faasd provider +
 * `faasd up` in its own network and mount namespace, the Syncmesh function deployed through the
 * gateway. Asserts the exact aggregate and a complete collect through each node's gateway,
 * /system/info, /system/functions and /system/logs, that a kill -9 of the listener's or the
 * agent's container task comes back by itself within 10 s, that a subscriber's replicas equal
 * its origin's readings document for document after every kind of write of the newest pymongo
 * and Node driver (no resync; an aggregate through the third node counts each reading once),
 * and that mesh-down leaves no namespace, cgroup or process behind.
 *
 * Tier `make test-faasd` (sets MESH_FAASD_TEST=1). Needs root, make tools, make build,
 * make faasd-bins and make images. Data: MESH_TEST_DATA (make test-faasd DATA=…), else
 * ../shared/data/sofia when present, else generated.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, REPO_ROOT, type MeshConfig } from '../../src/config.js';
import { postFunction } from '../../src/client/client.js';
import { down, status, up, type MeshHandle } from '../../src/mesh.js';
import { expectedFromMongo, expectedOf, type ExpectedAggregate } from '../../src/client/oracle.js';
import { aggregateOf, assertEqualAggregate, testMeshEnv } from './support.js';
import { aggregateRequest, collectRequest, DAY_END, DEFAULT_RADIUS_KM, MONTH_END, MONTH_START, originalRequest } from '../../src/client/queries.js';
import { readState } from '../../src/plan/state.js';
import {
  deployFunctions,
  FAASD_NODE_ROLE,
  faasdStateDir,
  FAASD_PATHS,
  functionTaskAddress,
  GatewayClient,
  inNode,
  mongoReady,
  renderFunctions,
  restartFaasdNode,
  serviceAddress,
  stackVars,
} from '../../src/runtime/faasd.js';
import { MeshError, squashError } from '../../src/errors.js';
import { cut, restore } from '../../src/mesh.js';
import { listNodes, meta } from '../../src/client/client.js';
import { MongoClient, type ObjectId } from 'mongodb';
import { replicaId } from '@syncmesh-edge/syncmesh-fn/replica-id';
import { httpOk, leftovers, run, waitForEvery } from '@syncmesh-edge/lab';
import { ensurePymongo, nodeReadingWrites, pymongoReadingWrites, READING_WRITE_EVENTS, READINGS_LEFT } from '@syncmesh-edge/mongo-test-server';
import { SDK_MAIN, type SdkClient } from '../../src/chaos/driver.js';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { assertOriginalBodiesExact } from '../../src/testing/original-bodies.js';
import { trackedConnections } from '../../src/network/network.js';
import { linkProxies } from '../../src/plan/plan.js';
import { linkShapes } from '../../src/network/latency.js';
import { ToxiproxyClient } from '../../src/network/toxiproxy.js';
import { augustReading, replicaDiff } from '../../src/testing/replicas.js';
import type { TopologyNode } from '../../src/plan/topology.js';
import { iptablesRules, netnsSkipReason, recordedProcesses, stillRunning, tempStateRoot, uniqueMeshName } from '../../src/testing/helpers.js';

const NODE_TIMEOUT_MS = 10_000;
const DEADLINE_MS = 20_000;
const RESTART_WITHIN_MS = 10_000;
// Deadlines of what only has to happen eventually: generous, as the tier runs in `make test` on a
// shared host where a Node.js service or a fresh function can take many times its idle start-up.
const EVENTUALLY_MS = 120_000;
const functionMain = join(REPO_ROOT, 'functions', 'syncmesh', 'dist', 'src', 'main.js');
const NODE_DRIVER_VERSION = (createRequire(import.meta.url)('mongodb/package.json') as { version: string }).version;
const faasdBin = join(REPO_ROOT, '.cache', 'faasd', 'bin', 'amd64', 'faasd');

function skipReason(): string | false {
  if (process.env['MESH_FAASD_TEST'] !== '1') return 'faasd tier: run make test-faasd (MESH_FAASD_TEST=1)';
  const base = netnsSkipReason({ functionMain });
  if (base) return base;
  if (!existsSync(faasdBin)) return 'needs make faasd-bins';
  if (!existsSync(join(FAASD_PATHS.images, 'syncmesh-fn.oci.tar'))) return 'needs make images';
  return false;
}
const skip = skipReason();

const name = uniqueMeshName('smf');
const stateRoot = tempStateRoot();
let cfg: MeshConfig;
let mesh: MeshHandle;
let rulesBefore = '';

function expected(start: string, end: string): Promise<ExpectedAggregate> {
  return expectedOf({ dataDir: cfg.dataDir, uris: mesh.topology.nodes.map((n) => n.mongodb_uri) }, start, end);
}

function nodePid(nodeId: string): number {
  const rec = readState(join(stateRoot, name))!.processes.find((p) => p.role === FAASD_NODE_ROLE && p.node === nodeId);
  assert.ok(rec, `a ${FAASD_NODE_ROLE} process for ${nodeId}`);
  return rec.pid;
}

/** The PID of a compose service's task in a node (ctr tasks ls), or null when it has none running. */
async function taskPid(nodeId: string, service: string): Promise<number | null> {
  const { stdout } = await inNode(nodePid(nodeId), ['ctr', '-n', 'openfaas', 'tasks', 'ls']);
  const row = stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[0] === service);
  return row && row[2] === 'RUNNING' ? Number(row[1]) : null;
}

/** The container that serves `name` in a node's containerd namespace (a function being replaced may have two: the newest serves). */
async function containerId(nodeId: string, ns: string, name: string): Promise<string> {
  const ids = (await inNode(nodePid(nodeId), ['ctr', '-n', ns, 'containers', 'ls', '-q'])).stdout.split('\n').map((l) => l.trim());
  const id = ids.includes(name)
    ? name
    : ids
        .filter((i) => i.startsWith(`${name}.`))
        .sort()
        .pop();
  assert.ok(id, `a container for ${name} in ${ns}: ${ids.join(' ')}`);
  return id;
}

/** A unary SDK client on a node's MISO agent (its socket is bind-mounted from the node's state). */
async function agentClient(nodeId: string): Promise<SdkClient> {
  const sdk = (await import(pathToFileURL(SDK_MAIN).href)) as { MisoClient: new (socket: string, deadlineMs: number, transport: string) => SdkClient };
  const node = readState(join(stateRoot, name))!.plan.nodes.find((x) => x.id === nodeId)!;
  return new sdk.MisoClient(join(node.dir, 'faasd', 'var-lib-faasd', 'miso-agent', 'agent.sock'), 10_000, 'unary');
}

const CRDT = { fn: 'faasd-test', object: 'counters', name: 'hits' } as const;

/** Adds n to one of the test's grow-only counters through a node's agent (retried while the agent restarts). */
async function crdtAdd(nodeId: string, n: number, counter: string = CRDT.name): Promise<void> {
  await pollUntil(`+${n} through ${nodeId}'s agent`, 60_000, async () => {
    const c = await agentClient(nodeId);
    try {
      await c.register(CRDT.fn, `faasd-test-${nodeId}`);
      await c.apply(CRDT.fn, CRDT.object, counter, 'gcounter', { op: 'add', n });
      return true;
    } catch (err) {
      // a call that never reached the agent did nothing: retry; one the agent refused is a failure
      if (!/UNAVAILABLE|ECONNREFUSED|ENOENT|No connection/i.test(String((err as Error).message))) throw err;
      return false;
    } finally {
      c.close();
    }
  });
}

/** Waits until every node's agent reads `want` for the counter; returns the ms it took. */
async function crdtConverged(want: number, deadlineMs = 60_000, counter: string = CRDT.name): Promise<number> {
  const t0 = Date.now();
  const seen: Record<string, unknown> = {};
  await pollUntil(`every agent reads ${want} (last: ${JSON.stringify(seen)})`, deadlineMs, async () => {
    for (const n of mesh.topology.nodes) {
      const c = await agentClient(n.id);
      try {
        seen[n.id] = (await c.read(CRDT.fn, CRDT.object, counter, 'gcounter')).value;
      } catch (err) {
        seen[n.id] = String((err as Error).message).slice(0, 60);
      } finally {
        c.close();
      }
    }
    return Object.values(seen).every((v) => v === want);
  });
  return Date.now() - t0;
}

async function pollUntil<T>(what: string, deadlineMs: number, check: () => Promise<T | null | false>): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) assert.fail(`${what}: not within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  if (skip) return;
  rulesBefore = iptablesRules();
  cfg = loadConfig(testMeshEnv({ name, stateRoot, nodeTimeoutMs: NODE_TIMEOUT_MS, deadlineMs: DEADLINE_MS }, { MESH_RUNTIME: 'faasd' }));
  const t0 = Date.now();
  mesh = await up(cfg, { progress: (m) => process.stderr.write(`[faasd test] ${m}\n`) });
  process.stderr.write(`[faasd test] 3-node faasd mesh up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  // the first query on a fresh JVM is slow (JIT), slower than the watchdog's 30 s timeouts on a
  // busy host: warm every node's database directly, one at a time
  for (const n of mesh.topology.nodes) await expectedFromMongo([n.mongodb_uri], MONTH_START, MONTH_END);
});

after(async () => {
  if (skip) return;
  await down(stateRoot, name);
  rmSync(stateRoot, { recursive: true, force: true });
});

test('faasd mesh - the topology names the runtime, each gateway and its basic-auth file', { skip }, async () => {
  const topo = JSON.parse(readFileSync(join(stateRoot, name, 'topology.json'), 'utf8')) as Record<string, unknown>;
  assert.equal(Object.keys(topo)[0], 'runtime');
  assert.equal(mesh.topology.runtime, 'faasd');
  // the clients' write key (faasd secret write-key of every function), not the mesh secret
  const writeKey = readFileSync(mesh.topology.write_key_file, 'utf8').trim();
  assert.ok(writeKey.length >= 32 && writeKey !== mesh.secret, 'a write key of 32+ bytes, not the mesh secret');
  for (const n of mesh.topology.nodes) {
    assert.equal(n.gateway_url, `http://${n.address}:8080`);
    assert.equal(n.function_url, `${n.gateway_url}/function/syncmesh-fn`);
    assert.match(readFileSync(n.basic_auth_file!, 'utf8'), /^admin:[A-Za-z0-9]{20,}$/);
  }
  // status probes /readyz through each gateway with a 1 s timeout: on a loaded host one probe may miss it
  await pollUntil('mesh-status reports every node ready', EVENTUALLY_MS, async () => (await status(stateRoot, name)).nodes.every((n) => n.ready));
});

test('faasd mesh - /system/info reports the faasd provider and gateway built here; /system/functions lists syncmesh-fn', { skip }, async () => {
  for (const n of mesh.topology.nodes) {
    const gw = new GatewayClient(n.gateway_url!, readFileSync(n.basic_auth_file!, 'utf8').trim());
    const info = await gw.info();
    assert.equal(info.provider.provider, 'faasd');
    assert.equal(info.provider.version.release, '0.19.0');
    assert.equal(info.version.release, '0.27.5');
    const fns = await gw.functions();
    const fn = fns.find((f) => f.name === 'syncmesh-fn');
    assert.ok(fn, `syncmesh-fn in ${JSON.stringify(fns)}`);
    assert.ok((fn.replicas ?? 0) >= 1, `replicas ${fn.replicas}`);
    assert.deepEqual(fn.secrets, ['mesh-secret', 'write-key', 'mongodb-uri']);
    // basic auth guards /system
    assert.equal((await fetch(`${n.gateway_url}/system/functions`)).status, 401);
  }
});

test('faasd mesh - the MongoDB URI reaches the function, listener and agent only through the mongodb-uri secret, never env', { skip }, async () => {
  const n = mesh.topology.nodes[0]!;
  const node = readState(join(stateRoot, name))!.plan.nodes[0]!;
  const uri = readFileSync(join(node.dir, 'faasd', 'var-lib-faasd', 'secrets', 'mongodb-uri'), 'utf8').trim();
  assert.match(uri, /^mongodb:\/\//);
  const gw = new GatewayClient(n.gateway_url!, readFileSync(n.basic_auth_file!, 'utf8').trim());
  const fn = (await gw.functions()).find((f) => f.name === 'syncmesh-fn')!;
  assert.equal(fn.envVars?.['MONGODB_URI'], undefined, 'no MONGODB_URI in the deployed env');
  assert.equal(fn.envVars?.['MONGODB_URI_FILE'], '/var/openfaas/secrets/mongodb-uri');
  // what containerd runs: the environment of every container of the node
  for (const [ns, ctr] of [
    ['openfaas-fn', 'syncmesh-fn'],
    ['openfaas', 'listener'],
    ['openfaas', 'miso-agent'],
  ] as const) {
    const info = JSON.parse((await inNode(nodePid(n.id), ['ctr', '-n', ns, 'containers', 'info', await containerId(n.id, ns, ctr)])).stdout) as {
      Spec: { process: { env: string[] } };
    };
    const env = info.Spec.process.env;
    assert.equal(
      env.some((kv) => kv.startsWith('MONGODB_URI=') || kv.includes(uri)),
      false,
      `${ctr}: ${env.filter((kv) => kv.startsWith('MONGODB')).join(' ')}`,
    );
    assert.ok(
      env.some((kv) => kv.startsWith('MONGODB_URI_FILE=')),
      `${ctr} reads MONGODB_URI_FILE`,
    );
  }
  const logs = (await gw.logs('syncmesh-fn', { tail: 500 })).map((l) => l.text).join('\n');
  assert.equal(logs.includes(uri), false, 'the URI is not in the function log');
  assert.ok(await httpOk(`${n.function_url}/readyz`, 5_000), 'the function connected with the URI from the secret');
});

test("faasd mesh - the aggregate through each node's gateway equals the value computed from the data", { skip }, async () => {
  const want = await expected(MONTH_START, MONTH_END);
  for (const n of mesh.topology.nodes) {
    const a = await postFunction(n.function_url, aggregateRequest(MONTH_START, MONTH_END, { radius: DEFAULT_RADIUS_KM }), { timeoutMs: DEADLINE_MS + 10_000 });
    assert.equal(a.answer.extensions?.['answered'], 3, `${n.id}: ${JSON.stringify(a.answer.extensions)}`);
    assertEqualAggregate(aggregateOf(a), want, n.id);
  }
});

test("faasd mesh - the original client's bodies naming the function_urls mesh-up prints are answered exactly through every gateway, through the links", {
  skip,
}, async () => {
  const lines = await assertOriginalBodiesExact(mesh.topology, mesh.secret, expected, DEADLINE_MS + 10_000);
  for (const l of lines) process.stderr.write(`[faasd test] original bodies (faasd runtime): ${l}\n`);
  // the function's (and the agent's) container asked its peers' own addresses; node-1's namespace
  // sent every such connection (routed from the container bridge: PREROUTING) to the link's
  // proxy on the host
  const plan = readState(join(stateRoot, name))!.plan;
  const node1 = plan.nodes[0]!;
  const links = new Map(
    linkProxies(plan)
      .filter((l) => l.from === 1)
      .map((l) => [l.upstream, l]),
  );
  const conns = (await trackedConnections(node1)).filter((c) => links.has(`${c.dst}:${c.dport}`));
  assert.ok(
    conns.some((c) => c.dport === 8080),
    "node-1's function connected to its peers' gateways",
  );
  for (const c of conns) {
    const l = links.get(`${c.dst}:${c.dport}`)!;
    assert.deepEqual(
      [c.replySrc, c.replySport],
      [l.listenHost, l.listenPort],
      `${c.src} -> ${c.dst}:${c.dport} answered by ${l.name}'s proxy: ${JSON.stringify(c)}`,
    );
  }
});

test("faasd mesh - the link profile still applies: node-1's function and agent, naming node-2 by its own address, wait for the node-1 > node-2 link's latency", {
  skip,
}, async () => {
  const ONE_WAY_MS = 150;
  const state = readState(join(stateRoot, name))!;
  const plan = state.plan;
  const toxi = new ToxiproxyClient(plan.toxiproxyApi.host, plan.toxiproxyApi.port);
  const slow = linkProxies(plan).filter((l) => l.from === 1 && l.to === 2);
  const shape = { latencyMs: ONE_WAY_MS, jitterMs: 0, bandwidthKbitS: null, loss: 0 };
  await toxi.applyShapes(slow, [{ from: 1, to: 2, upstream: shape, downstream: shape }]);
  try {
    const [n1, n2, n3] = mesh.topology.nodes;
    const body = originalRequest(`{ sensorsAggregate(start_time: "${MONTH_START}", end_time: "${DAY_END}") { count } }`, 'aggregate', [
      n2!.function_url,
      n3!.function_url,
    ]);
    const to2: number[] = [];
    const to3: number[] = [];
    for (let i = 0; i < 4; i++) {
      const a = await postFunction(n1!.function_url, body, { timeoutMs: DEADLINE_MS + 10_000 });
      assert.deepEqual(a.answer.errors ?? [], []);
      if (i === 0) continue; // the first call opens the connections
      const ms = (id: string) => a.answer.extensions?.nodes?.find((x) => x.node === id)?.ms ?? Number.NaN;
      to2.push(ms('node-2'));
      to3.push(ms('node-3'));
    }
    // the agent: an add on node-1 reaches node-2 across the slow link, node-3 across a fast one
    // (a counter of its own: the kill tests below count theirs from 0)
    const counter = 'link-latency';
    for (const id of ['node-1', 'node-2', 'node-3']) await crdtAdd(id, 1, counter);
    await crdtConverged(3, 60_000, counter);
    const t0 = Date.now();
    await crdtAdd('node-1', 1, counter);
    const arrival = async (id: string) => {
      await pollUntil(`${id} reads 4`, 60_000, async () => {
        const c = await agentClient(id);
        try {
          return Number((await c.read(CRDT.fn, CRDT.object, counter, 'gcounter')).value ?? 0) === 4;
        } catch (err) {
          squashError(err);
          return false;
        } finally {
          c.close();
        }
      });
      return Date.now() - t0;
    };
    const [agent2, agent3] = await Promise.all([arrival('node-2'), arrival('node-3')]);
    process.stderr.write(
      `[faasd test] links: node-1 > node-2 at ${ONE_WAY_MS} ms one-way: node-1's function got node-2's answer after ${to2.map(Math.round).join(', ')} ms, node-3's (site profile) after ${to3.map(Math.round).join(', ')} ms; a gcounter add on node-1 read on node-2 after ${agent2} ms, on node-3 after ${agent3} ms\n`,
    );
    for (const ms of to2) assert.ok(ms >= 2 * ONE_WAY_MS, `node-2 answered node-1 after ${ms} ms, less than the link's ${2 * ONE_WAY_MS} ms round trip`);
    assert.ok(Math.min(...to3) < Math.min(...to2), 'node-3, on a fast link, answers sooner');
    assert.ok(agent2 >= ONE_WAY_MS, `the add reached node-2 after ${agent2} ms, before the link's ${ONE_WAY_MS} ms`);
  } finally {
    const coords = new Map(Object.entries(state.coords).map(([k, v]) => [Number(k), v] as const));
    await toxi.applyShapes(slow, linkShapes(cfg.latency, plan.nodes.length, coords));
  }
});

test("faasd mesh - a collect through each node's gateway returns every reading of the day", { skip }, async () => {
  const want = await expected(MONTH_START, DAY_END);
  for (const n of mesh.topology.nodes) {
    const a = await postFunction(n.function_url, collectRequest(MONTH_START, DAY_END, { radius: DEFAULT_RADIUS_KM }), { timeoutMs: DEADLINE_MS + 10_000 });
    assert.deepEqual(a.answer.errors ?? [], []);
    const rows = a.answer.data!['sensors'] as { _id: string }[];
    assert.equal(rows.length, want.count, `${n.id}: ${rows.length} readings, the data has ${want.count}`);
    assert.equal(new Set(rows.map((r) => `${r._id}`)).size, rows.length, 'no reading twice');
  }
});

test("faasd mesh - the function's logs are readable through /system/logs", { skip }, async () => {
  const n = mesh.topology.nodes[0]!;
  const gw = new GatewayClient(n.gateway_url!, readFileSync(n.basic_auth_file!, 'utf8').trim());
  // journald on a busy host may hand over the request lines before the watchdog's start-up lines:
  // poll until those are there too
  const lines = await pollUntil("the watchdog's start-up lines among the function's logs", EVENTUALLY_MS, async () => {
    const l = await gw.logs('syncmesh-fn', { tail: 200 });
    return l.some((x) => /fork|watchdog|listening|Forking/i.test(x.text)) ? l : null;
  });
  assert.ok(lines.every((l) => typeof l.text === 'string' && l.timestamp));
});

/** bin/syncmesh ... --mesh <this mesh> --json (the operator CLI, cli/), parsed. */
function syncmesh(args: string[]): { code: number; json: any; stderr: string } {
  try {
    const out = execFileSync(join(REPO_ROOT, 'bin', 'syncmesh'), [...args, '--mesh', join(stateRoot, name, 'topology.json'), '--json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    return { code: 0, json: JSON.parse(out), stderr: '' };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, json: e.stdout ? JSON.parse(e.stdout) : null, stderr: e.stderr };
  }
}

test('faasd mesh - syncmesh status: every service of every node, the versions from each gateway', { skip }, async () => {
  const s = await pollUntil('syncmesh status reports every node healthy', EVENTUALLY_MS, async () => {
    const r = syncmesh(['status', '--timeout-ms', '20000']);
    return r.code === 0 ? r : null;
  });
  for (const n of s.json.nodes) {
    assert.deepEqual(
      [n.reachable, n.services.function.state, n.services.listener.state, n.services.agent.state, n.services.gateway.state],
      [true, 'ok', 'ok', 'ok', 'ok'],
      n.id,
    );
    assert.deepEqual(n.versions, { function: '0.1.0', listener: '0.1.0', gateway: '0.27.5', faasd: '0.19.0' }, n.id);
    assert.equal(n.peers.length, 2, n.id);
  }
});

test("faasd mesh - syncmesh logs: the function's and the node services' logs through each gateway", { skip }, async () => {
  const fn = await pollUntil("every node's function log through the gateway", EVENTUALLY_MS, async () => {
    const r = syncmesh(['logs', 'function', '--all', '--tail', '20']);
    return r.code === 0 && r.json.nodes.every((n: { lines: unknown[] }) => n.lines.length > 0) ? r : null;
  });
  for (const n of fn.json.nodes) assert.match(n.source, /\/system\/logs \(openfaas-fn:syncmesh-fn\)$/);
  // the node's own services log to journald as openfaas:<service> (faasd collect): the gateway serves those too
  for (const service of ['listener', 'agent', 'mongo', 'gateway']) {
    const r = await pollUntil(`node-1's ${service} log through the gateway`, EVENTUALLY_MS, async () => {
      const x = syncmesh(['logs', service, '--node', 'node-1', '--tail', '5']);
      return x.code === 0 && x.json.nodes[0].lines.length > 0 ? x : null;
    });
    assert.match(r.json.nodes[0].source, /\(openfaas:/);
  }
});

test('faasd mesh - the provider looks the function up once per task, not on every call (patch 0005)', { skip }, async () => {
  const n = mesh.topology.nodes[0]!;
  const node = readState(join(stateRoot, name))!.plan.nodes[0]!;
  const log = join(faasdStateDir(node), 'logs', 'provider.log');
  // the provider logs each full look-up (containerd + CNI files) of a function it invokes
  const lookups = () => (readFileSync(log, 'utf8').match(/Resolve: "syncmesh-fn"/g) ?? []).length;
  assert.ok(await httpOk(`${n.function_url}/readyz`, DEADLINE_MS), 'the function answers');
  const before = lookups();
  for (let i = 0; i < 20; i++) assert.ok(await httpOk(`${n.function_url}/readyz`, DEADLINE_MS), `call ${i + 1} answered`);
  assert.ok(lookups() - before <= 1, `20 calls through the gateway made ${lookups() - before} full look-ups (at most 1)`);
});

test('faasd mesh - while the provider follows the task events, calls need no look-up; a task event makes the next call look up again (patch 0007)', {
  skip,
}, async () => {
  const n = mesh.topology.nodes[0]!;
  const node = readState(join(stateRoot, name))!.plan.nodes[0]!;
  const log = join(faasdStateDir(node), 'logs', 'provider.log');
  const text = () => readFileSync(log, 'utf8');
  const lookups = () => (text().match(/Resolve: "syncmesh-fn"/g) ?? []).length;
  const call = async (what: string) => assert.ok(await httpOk(`${n.function_url}/readyz`, DEADLINE_MS), what);
  await call('the function answers');
  await pollUntil('the provider follows the task events of openfaas-fn', 30_000, async () =>
    /following the task events of openfaas-fn/.test(text()) ? true : null,
  );
  await call('a call once the events are followed');
  const before = lookups();
  for (let i = 0; i < 5; i++) await call(`call ${i + 1}`);
  assert.equal(lookups() - before, 0, 'no full look-up while the events are followed and nothing happened');
  // a task event of the function's namespace (pause, then resume its task) forgets the address
  const id = await containerId(n.id, 'openfaas-fn', 'syncmesh-fn');
  await inNode(nodePid(n.id), ['ctr', '-n', 'openfaas-fn', 'tasks', 'pause', id]);
  await inNode(nodePid(n.id), ['ctr', '-n', 'openfaas-fn', 'tasks', 'resume', id]);
  await pollUntil('a call after the task event looks the function up again', 15_000, async () => {
    await call('a call after the task event');
    return lookups() > before ? true : null;
  });
  const after = lookups();
  for (let i = 0; i < 5; i++) await call(`call ${i + 1} after the event`);
  assert.equal(lookups() - after, 0, 'the new look-up is remembered again');
});

test("faasd mesh - published ports are DNATed to their services (patch 0006): a new connection from another host goes through the rule; loopback and the containers' own connections reach the gateway through the proxy", {
  skip,
}, async () => {
  const n = mesh.topology.nodes[0]!;
  const node = readState(join(stateRoot, name))!.plan.nodes[0]!;
  const pid = nodePid(n.id);
  const gateway = serviceAddress(faasdStateDir(node), 'gateway');
  /** The packets (nat: a connection's first) the rule for port 8080 to the gateway has taken. */
  const dnatted = async () => {
    const table = (await inNode(pid, ['iptables', '-w', '5', '-t', 'nat', '-L', 'FAASD-PUBLISH', '-n', '-v', '-x'])).stdout;
    const row = table.split('\n').find((l) => /dpt:8080\b/.test(l) && l.includes(`to:${gateway}:8080`));
    assert.ok(row, `a DNAT rule for port 8080 to the gateway (${gateway}):\n${table}`);
    assert.ok(!/dpt:9090\b/.test(table), `prometheus is published on 127.0.0.1 only: no rule\n${table}`);
    return Number(row.trim().split(/\s+/)[0]);
  };
  const before = await dnatted();
  // three new connections from the host (another host on the node's network), as a client or peer makes them
  for (let i = 0; i < 3; i++) await run('curl', ['-sf', '-o', '/dev/null', '--max-time', '10', `${n.gateway_url}/healthz`]);
  const after = await dnatted();
  assert.ok(after - before >= 3, `3 connections to ${n.address}:8080, the rule took ${after - before}`);
  // 127.0.0.1 is not rewritten (it would need route_localnet): faasd up's proxy still serves it
  await inNode(pid, ['curl', '-sf', '-o', '/dev/null', '--max-time', '10', 'http://127.0.0.1:8080/healthz']);
  // nor are the containers' own connections to the node's address (DNAT to the gateway on the same
  // bridge would be answered straight over the bridge, from an address the container did not call)
  const listener = await pollUntil('the listener task', 30_000, () => taskPid(n.id, 'listener'));
  const fromContainer = () => run('nsenter', ['-t', String(listener), '-n', 'curl', '-sf', '-o', '/dev/null', '--max-time', '5', `${n.gateway_url}/healthz`]);
  const taken = await dnatted();
  await fromContainer();
  await fromContainer();
  assert.equal(await dnatted(), taken, 'connections from a container are not DNATed');
});

for (const [service, probe] of [
  ['listener', (addr: string) => httpOk(`http://${addr}:8091/readyz`, 1_000)],
  // inside the task's own network namespace: faasd's port proxy accepts before the agent listens
  [
    'miso-agent',
    (_addr: string, pid: number) =>
      run('nsenter', ['-t', String(pid), '-n', 'bash', '-c', 'exec 3<>/dev/tcp/127.0.0.1/7070'], { timeoutMs: 2_000 }).then(
        () => true,
        () => false,
      ),
  ],
] as const) {
  test(`faasd mesh - kill -9 of the ${service}'s container task: a new task runs within ${RESTART_WITHIN_MS / 1000} s and serves again`, { skip }, async () => {
    const n = mesh.topology.nodes[1]!;
    const before = await pollUntil(`${service} running`, 30_000, () => taskPid(n.id, service));
    if (service === 'miso-agent') {
      // CRDT state on every node before the kill: 3 + 5 + 7
      for (const [id, k] of [
        ['node-1', 3],
        ['node-2', 5],
        ['node-3', 7],
      ] as const)
        await crdtAdd(id, k);
      await crdtConverged(15);
    }
    const t0 = Date.now();
    process.kill(before, 'SIGKILL');
    if (service === 'miso-agent') await crdtAdd('node-1', 11); // while node-2's agent is down
    // faasd brings the task back (the must-hold: within 10 s); the service in it then starts up,
    // which on a busy host may take longer, so its readiness only has to come eventually
    const after = await pollUntil(`${service} restarted`, RESTART_WITHIN_MS, async () => {
      const p = await taskPid(n.id, service);
      return p !== null && p !== before ? p : null;
    });
    const restartedMs = Date.now() - t0;
    await pollUntil(`${service} ready again`, EVENTUALLY_MS, () => probe(n.address, after));
    process.stderr.write(
      `[faasd test] ${service} on ${n.id}: pid ${before} killed, pid ${after} running after ${restartedMs} ms, ready after ${Date.now() - t0} ms\n`,
    );
    if (service === 'miso-agent') {
      // the new agent links up with both peers again: v2 handshakes both ways, their ids pinned in MISO_PEERS
      await pollUntil('the restarted agent connected to both peers', 60_000, async () => {
        const m = await run('nsenter', ['-t', String(after), '-n', 'curl', '-sf', 'http://127.0.0.1:9464/metrics'], { timeoutMs: 5_000 }).then(
          (r) => r.stdout,
          () => '',
        );
        return /^edge_miso_peers\{state="connected"\} 2$/m.test(m);
      });
      process.stderr.write(`[faasd test] miso-agent on ${n.id}: connected to both peers ${Date.now() - t0} ms after the kill\n`);
      // node-2 kept its own +5 (persisted in its MongoDB), learns the +11 made while it was down, and its new ops reach the others
      await crdtAdd('node-2', 13);
      const ms = await crdtConverged(3 + 5 + 7 + 11 + 13);
      process.stderr.write(
        `[faasd test] CRDT counter converged to 39 on all agents ${ms} ms after the restarted agent's op (${Date.now() - t0} ms after the kill)\n`,
      );
    }
  });
}

test("faasd mesh - replication node-2 -> node-3 loses nothing across a kill -9 of node-2's listener task", { skip }, async () => {
  const [n2, n3] = [mesh.topology.nodes[1]!, mesh.topology.nodes[2]!];
  await meta(n2.function_url, mesh.secret, `mutation { updateNode(id: "${n3.id}", node: {subscribed: true, initial_sync: false}) { id } }`);
  const c2 = await MongoClient.connect(n2.mongodb_uri);
  const c3 = await MongoClient.connect(n3.mongodb_uri);
  try {
    const origin = c2.db('syncmesh').collection('sensor_data');
    const replicas = c3.db('syncmesh').collection<{ _id: string }>('sensor_data_replicas');
    const ids: ObjectId[] = [];
    for (let i = 0; i < 60; i++) {
      const doc = augustReading(i);
      await origin.insertOne(doc);
      ids.push(doc._id);
      if (i === 20) process.kill((await taskPid(n2.id, 'listener'))!, 'SIGKILL');
    }
    const rids = ids.map((id) => replicaId(n2.id, id));
    const t0 = Date.now();
    await pollUntil('all 60 replicas on node-3', 120_000, async () => (await replicas.countDocuments({ _id: { $in: rids } })) === rids.length);
    process.stderr.write(`[faasd test] 60 readings (listener killed after 21) all replicated to ${n3.id} ${Date.now() - t0} ms after the last insert\n`);
  } finally {
    await c2.close();
    await c3.close();
  }
});

/** The listener's counters for syncmesh.sensor_data (its /metrics, published on the node's address). */
async function listenerCounters(address: string): Promise<{ read: number; resyncs: number }> {
  const text = await (await fetch(`http://${address}:8091/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  const value = (name: string) => Number(new RegExp(`^${name}\\{ns="syncmesh\\.sensor_data"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const counters = { read: value('edge_listener_events_read_total'), resyncs: value('edge_listener_resyncs_total') };
  assert.ok(Number.isFinite(counters.read) && Number.isFinite(counters.resyncs), `the listener's counters in its metrics: ${JSON.stringify(counters)}`);
  return counters;
}

test("faasd mesh - node-2 subscribes to node-1's sensor-month; every kind of write of the newest pymongo and the Node driver on node-1 reaches node-2's replicas as updates, no resync; an aggregate through node-3 counts each reading once", {
  skip,
}, async () => {
  const [n1, n2, n3] = mesh.topology.nodes as [TopologyNode, TopologyNode, TopologyNode];
  const py = await ensurePymongo(); // first: installing it (once a day) takes seconds
  const c1 = await MongoClient.connect(n1.mongodb_uri);
  const c2 = await MongoClient.connect(n2.mongodb_uri);
  try {
    const own = c1.db('syncmesh').collection('sensor_data');
    const replicas = c2.db('syncmesh').collection('sensor_data_replicas');
    const held = await own.countDocuments();
    const t0 = Date.now();
    // "node-2 subscribes to node-1" is node-2 marked subscribed in node-1's registry; an initial sync first
    await meta(n1.function_url, mesh.secret, `mutation { updateNode(id: "${n2.id}", node: {subscribed: true}) { id } }`);
    await pollUntil(
      `node-2 holds node-1's ${held} readings (initial sync)`,
      EVENTUALLY_MS,
      async () => (await replicas.countDocuments({ _origin: n1.id })) === held,
    );
    const syncMs = Date.now() - t0;
    const before = await listenerCounters(n1.address);
    // both drivers at once, each on its own sensor, in September 2017 (outside every July window)
    const [p, n] = await Promise.all([
      pymongoReadingWrites(py, n1.mongodb_uri, 'syncmesh', 'sensor_data', { sensorId: 9101, start: new Date(Date.UTC(2017, 8, 1)) }),
      nodeReadingWrites(own, { sensorId: 9102, start: new Date(Date.UTC(2017, 8, 2)) }, `Node driver ${NODE_DRIVER_VERSION}`),
    ]);
    const lastWrite = Math.max(p.last_write_ms, n.last_write_ms);
    const writersDoneMs = Date.now() - lastWrite; // pymongo's process exits after its last write: polling starts here
    assert.deepEqual([p.count, n.count], [READINGS_LEFT, READINGS_LEFT], 'what the writes leave on node-1');
    const september = { timestamp: { $gte: new Date(Date.UTC(2017, 8, 1)), $lt: new Date(Date.UTC(2017, 9, 1)) } };
    let diff = replicaDiff(n1.id, [], []);
    await waitForEvery(
      "node-2's replicas of the written readings equal node-1's",
      async () => {
        diff = replicaDiff(n1.id, await own.find(september).toArray(), await replicas.find({ _origin: n1.id, ...september }).toArray());
        return diff.problems.length === 0;
      },
      60_000,
      20,
    ).catch((err: unknown) => assert.fail(`${(err as Error).message}: ${diff.problems.join('; ')}`));
    const convergedMs = Date.now() - lastWrite;
    assert.equal(diff.readings, 2 * READINGS_LEFT);
    // and the whole collection, document for document
    const full = replicaDiff(n1.id, await own.find().toArray(), await replicas.find({ _origin: n1.id }).toArray());
    assert.deepEqual(full.problems, [], `${full.readings} readings on node-1, ${full.replicas} replicas on node-2`);
    // each write came as its change event, and updates replicated as updates: no resync
    const after = await listenerCounters(n1.address);
    assert.equal(after.resyncs, before.resyncs, `node-1's listener resynced (${before.resyncs} -> ${after.resyncs})`);
    assert.equal(after.read - before.read, 2 * READING_WRITE_EVENTS, "change events node-1's listener read");
    // through node-3: each node counts its own readings, never the replicas node-2 holds
    const end = '2017-09-30T23:59:59Z';
    const want = await expectedFromMongo(
      mesh.topology.nodes.map((x) => x.mongodb_uri),
      MONTH_START,
      end,
    );
    const a = await postFunction(n3.function_url, aggregateRequest(MONTH_START, end, { radius: DEFAULT_RADIUS_KM }), { timeoutMs: DEADLINE_MS + 10_000 });
    assert.equal(a.answer.extensions?.['answered'], 3, JSON.stringify(a.answer.extensions));
    const got = aggregateOf(a);
    assertEqualAggregate(got, want, `through node-3 (node-2 holds ${full.replicas} replicas of node-1):`);
    process.stderr.write(
      `[faasd test] node-2 subscribed to node-1: initial sync of ${held} readings in ${syncMs} ms; ${p.driver} and ${n.driver}: ${p.calls} + ${n.calls} calls, ${after.read - before.read} change events, no resync; node-2's replicas equal node-1's readings ${Math.round(convergedMs)} ms after the last write (polled every 20 ms from ${Math.round(writersDoneMs)} ms on, when both drivers had returned; ${full.readings} documents compared); through node-3: ${got.count} readings July-September, each once\n`,
    );
  } finally {
    await c1.close();
    await c2.close();
  }
});

test('faasd mesh - bad deploy input (unknown image, missing or badly named secret) is refused saying what is wrong; the function keeps serving', {
  skip,
}, async () => {
  const node = readState(join(stateRoot, name))!.plan.nodes[0]!;
  const stack = readFileSync(FAASD_PATHS.description, 'utf8');
  for (const [what, text, want] of [
    ['unknown image', stack.replace('${FUNCTION_IMAGE}', 'localhost/syncmesh-edge/nope:1'), /nope:1 .*not in node-1's containerd/],
    ['undeclared secret', stack.replace('- mesh-secret', '- no-such-secret'), /'no-such-secret' is not one of the description's secrets/],
    [
      'missing secret',
      stack.replace('\nsecrets:\n', '\nsecrets:\n  extra-secret: {owner: 0, mode: "0400"}\n').replace('- mesh-secret', '- extra-secret\n      - mesh-secret'),
      /extra-secret.*does not have/,
    ],
    ['bad secret name', stack.replace('- mesh-secret', '- Bad_Name'), /secrets\.0: a lowercase DNS label/],
  ] as const) {
    await assert.rejects(
      deployFunctions(cfg, node, nodePid('node-1'), 'parallel', text, 10_000),
      (err: unknown) => err instanceof MeshError && err.code === 'EDGE_MESH_FAASD_DEPLOY' && want.test(err.message),
      what,
    );
  }
  // faasd itself (with our update patch) refuses an update naming a missing secret, and keeps the function
  const gw = GatewayClient.forNode(node);
  const r = await gw.request('PUT', '/system/functions', {
    service: 'syncmesh-fn',
    image: 'localhost/syncmesh-edge/syncmesh-fn:0.1.0',
    secrets: ['no-such-secret'],
  });
  assert.equal(r.status, 400, r.text);
  assert.match(r.text, /no-such-secret/);
  assert.ok(await httpOk(`${mesh.topology.nodes[0]!.function_url}/readyz`, 5_000), 'the function still answers');
});

test('faasd mesh - an update while a query is in flight longer than 5 s: the query is answered, the update returns, new queries reach the new version', {
  skip,
}, async () => {
  const n = mesh.topology.nodes[0]!;
  const node = readState(join(stateRoot, name))!.plan.nodes[0]!;
  const pid = nodePid('node-1');
  const gw = GatewayClient.forNode(node);
  // a new image reference in the node (the same bytes under a new tag: a rebuilt image takes
  // minutes) and a setting the new version answers differently: at most 1 root field per query
  const oldRef = readFileSync(join(node.dir, 'faasd', 'function-image'), 'utf8').trim();
  const newRef = `${oldRef}-update`;
  await inNode(pid, ['ctr', '-n', 'openfaas-fn', 'images', 'tag', '--force', oldRef, newRef]);
  const stack = readFileSync(FAASD_PATHS.description, 'utf8');
  const updated = stack
    .replace('image: ${FUNCTION_IMAGE}', `image: ${newRef}`)
    .replace('SYNCMESH_FORWARD_MODE: ${FORWARD_MODE}', 'SYNCMESH_FORWARD_MODE: ${FORWARD_MODE}\n      SYNCMESH_MAX_ROOT_FIELDS: "1"');
  const [fn] = await renderFunctions(stackVars(cfg, node, 'parallel'), updated);
  const twoRootFields = {
    query:
      '{ a: sensorsAggregate(start_time: "2017-07-01T00:00:00Z", end_time: "2017-07-02T00:00:00Z") { count } b: sensorsAggregate(start_time: "2017-07-01T00:00:00Z", end_time: "2017-07-02T00:00:00Z") { count } }',
  };
  const containers = async () =>
    (await inNode(pid, ['ctr', '-n', 'openfaas-fn', 'containers', 'ls', '-q'])).stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l === 'syncmesh-fn' || l.startsWith('syncmesh-fn.'));
  const before = await containers();
  assert.equal(before.length, 1, `one version serves before the update: ${before.join(' ')}`);
  // the watchdog's own gauge of the requests it serves (its metrics port, 8081)
  const oldTask = await functionTaskAddress(pid);
  const inFlightAtOld = async () => {
    const m = await inNode(pid, ['curl', '-sf', '--max-time', '5', `http://${oldTask}:8081/metrics`]).then(
      (r) => r.stdout,
      () => '',
    );
    return /^http_requests_in_flight [1-9]/m.test(m);
  };
  await cut(stateRoot, name, 'node-3'); // the query waits SYNCMESH_NODE_TIMEOUT_MS (10 s) for node-3
  let inflightDone = 0;
  try {
    const t0 = Date.now();
    const inflight = postFunction(n.function_url, aggregateRequest(MONTH_START, DAY_END, { radius: DEFAULT_RADIUS_KM }), {
      timeoutMs: DEADLINE_MS + 30_000,
    }).finally(() => (inflightDone = Date.now()));
    await pollUntil('the query in flight at the old version', DEADLINE_MS, inFlightAtOld);
    const tu = Date.now();
    assert.equal(await gw.deploy(fn!), 'updated');
    const updateMs = Date.now() - tu;
    const updatedWhileInFlight = inflightDone === 0;
    // while the old version still drains the query in flight, new queries reach the new one
    const during = await postFunction(n.function_url, twoRootFields, { timeoutMs: DEADLINE_MS + 10_000 });
    const duringAt = Date.now();
    assert.equal(during.status, 400, `the new version (1 root field) answered: ${JSON.stringify(during.answer)}`);
    assert.equal(during.answer.errors?.[0]?.extensions?.['code'], 'EDGE_SYNCMESH_QUERY_TOO_COSTLY');
    if (inflightDone === 0) assert.equal((await containers()).length, 2, 'the old version is still draining');
    const a = await inflight;
    assert.deepEqual(a.answer.errors ?? [], [], 'the query in flight across the update was answered');
    assert.ok(aggregateOf(a).count > 0);
    const inflightMs = inflightDone - t0;
    process.stderr.write(
      `[faasd test] update (PUT ${newRef}) returned ${updateMs} ms after it was sent, with a query in flight since ${tu - t0} ms; a new query hit the new version ${duringAt - tu} ms after the PUT; the query in flight took ${inflightMs} ms and was answered\n`,
    );
    assert.ok(inflightMs > 5_000, `the query was in flight longer than 5 s (${inflightMs} ms)`);
    // the update does not wait for the drain: the new version answers while the old one still
    // serves the query. The update's duration is the new version's cold start: the target (under
    // 5 s) holds on a quiet node; on a shared CI host it is reported here, not asserted, and when
    // that start outlasted the query in flight the overlap cannot be seen in this run.
    if (updatedWhileInFlight) assert.ok(duringAt < inflightDone, 'the new version answered while the old one was still draining');
    else process.stderr.write(`[faasd test] the update (${updateMs} ms) outlasted the query in flight: overlap not observable in this run\n`);
    process.stderr.write(`[faasd test] update target under 5 s: ${updateMs < 5_000 ? 'met' : 'MISSED'} (${updateMs} ms, load ${loadavg()[0]!.toFixed(1)})\n`);
    // the old version is removed once its query is done
    const left = await pollUntil('the old version removed', 60_000, async () => {
      const c = await containers();
      return c.length === 1 ? c : null;
    });
    assert.notDeepEqual(left, before);
    const fns = await gw.functions();
    assert.equal(fns.find((f) => f.name === 'syncmesh-fn')?.image, newRef);
  } finally {
    await restore(stateRoot, name, 'node-3');
  }
  // back to the original deployment, nothing in flight
  const tIdle = Date.now();
  await deployFunctions(cfg, node, pid, 'parallel');
  process.stderr.write(`[faasd test] update with nothing in flight: function answering ${Date.now() - tIdle} ms after the PUT\n`);
  const again = await postFunction(n.function_url, twoRootFields, { timeoutMs: DEADLINE_MS + 10_000 });
  assert.equal(again.status, 200, JSON.stringify(again.answer));
});

test('faasd mesh - a node restarted (faasd up and containerd stopped and started) keeps its data and registry', { skip }, async () => {
  const n = mesh.topology.nodes[2]!;
  const before = await expectedFromMongo([n.mongodb_uri], MONTH_START, MONTH_END);
  const peersBefore = (await listNodes(n.function_url, mesh.secret)).map((x) => x.id).sort();
  // CRDT state before the restart (the agent test above left 39 when it ran): +17 through node-3
  const crdtBase = await (async () => {
    const c = await agentClient(n.id);
    try {
      return Number((await c.read(CRDT.fn, CRDT.object, CRDT.name, 'gcounter')).value ?? 0);
    } finally {
      c.close();
    }
  })();
  await crdtAdd(n.id, 17);
  await crdtConverged(crdtBase + 17);
  const s = await restartFaasdNode(readState(join(stateRoot, name))!, n.id);
  process.stderr.write(
    `[faasd test] ${n.id} restarted; after the start: gateway ${s.gatewayS.toFixed(1)} s, MongoDB ${s.mongoS.toFixed(1)} s, function ready ${s.functionS.toFixed(1)} s\n`,
  );
  await pollUntil('MongoDB back', 60_000, () => mongoReady(n.mongodb_uri));
  assert.deepEqual(await expectedFromMongo([n.mongodb_uri], MONTH_START, MONTH_END), before);
  assert.deepEqual((await listNodes(n.function_url, mesh.secret)).map((x) => x.id).sort(), peersBefore);
  const a = await postFunction(mesh.topology.nodes[0]!.function_url, aggregateRequest(MONTH_START, MONTH_END, { radius: DEFAULT_RADIUS_KM }), {
    timeoutMs: DEADLINE_MS + 10_000,
  });
  assert.equal(aggregateOf(a).count, (await expected(MONTH_START, MONTH_END)).count, `the nodes' outcomes: ${JSON.stringify(a.answer.extensions?.nodes)}`);
  // the CRDT value survived the restart, and the restarted agent's new op reaches every node
  await crdtAdd(n.id, 19);
  const ms = await crdtConverged(crdtBase + 17 + 19);
  process.stderr.write(`[faasd test] ${n.id}'s CRDT counter survived the restart; ${crdtBase + 36} on all agents ${ms} ms after its next op\n`);
});

test('faasd mesh - mesh-down leaves no process, namespace, cgroup, mount or iptables rule', { skip }, async () => {
  const procs = recordedProcesses(join(stateRoot, name));
  await down(stateRoot, name);
  assert.deepEqual(stillRunning(procs), []);
  assert.deepEqual(await leftovers(name), { netns: [], links: [] });
  const cgroups = execFileSync('find', ['/sys/fs/cgroup', '-maxdepth', '5', '-type', 'd', '-name', `${name}-n*`], { encoding: 'utf8' }).trim();
  assert.equal(cgroups, '', 'no cgroup of the nodes');
  assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').includes(stateRoot), false, 'no mount under the state root');
  const shims = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(stateRoot));
  assert.deepEqual(shims, [], 'no process of the nodes');
  assert.equal(iptablesRules(), rulesBefore);
});
