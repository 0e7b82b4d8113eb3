/**
 * Users' functions on a 3-node faasd mesh (issue 26), with the upstream faas-cli built from the
 * source snapshot (hack/faas-cli.sh), buildah and skopeo, and each node's own registry:
 *
 * - one node: a function from a repository template built without a Docker engine
 *   (hack/fn-build.sh: faas-cli build --shrinkwrap, buildah), pushed to the node's registry,
 *   then faas-cli deploy --image, invoke, update with a new image, remove; scale to zero through
 *   the gateway is answered but keeps 1 replica (the Community Edition gateway); refused cleanly: an image for another architecture, the name of the node's own
 *   function, a wrong registry password;
 * - mesh-wide (src/deploy/deploy.ts): deploy to a named subset, a node that joins afterwards (syncNode)
 *   serves it, update, remove; refused before anything changes: an unknown node, a registry out
 *   of disk (a 24 MB tmpfs under one node's registry);
 * - the stateful counter (miso-counter, label com.syncmesh.miso=true) on all 3 nodes: adds on
 *   every node converge on every node, across a kill -9 of a function container and of an
 *   agent, with no acknowledged add lost; a bad body is the SDK's coded 400; without the label
 *   the SDK answers 503 EDGE_MISO_SDK_NOT_CONNECTED (coded JSON) at once.
 *
 * Tier `make test-faasd` (MESH_FAASD_TEST=1), with the regional latency profile on every link.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@syncmesh-edge/lab';
import { loadConfig, REPO_ROOT, type MeshConfig } from '../../src/config.js';
import { MeshError } from '../../src/errors.js';
import { deployFunction, nodesFromTopology, removeFunction, syncNode, type FunctionNode } from '../../src/deploy/deploy.js';
import { down, up, type MeshHandle } from '../../src/mesh.js';
import { FAASD_NODE_ROLE, FAASD_PATHS, GatewayClient, inNode } from '../../src/runtime/faasd.js';
import { readState } from '../../src/plan/state.js';
import { iptablesRules, netnsSkipReason, tempStateRoot, TOXIPROXY_BIN, uniqueMeshName } from '../../src/testing/helpers.js';

const EVENTUALLY_MS = 180_000;
const images = FAASD_PATHS.images;

function skipReason(): string | false {
  if (process.env['MESH_FAASD_TEST'] !== '1') return 'faasd tier: run make test-faasd (MESH_FAASD_TEST=1)';
  const base = netnsSkipReason();
  if (base) return base;
  for (const img of ['registry', 'miso-counter', 'fn-node20', 'syncmesh-fn']) {
    if (!existsSync(join(images, `${img}.oci.tar`))) return `needs the image ${img} (make faasd-tier-deps)`;
  }
  return false;
}
const skip = skipReason();

const name = uniqueMeshName('smu');
const stateRoot = tempStateRoot();
const work = mkdtempSync(join(tmpdir(), 'syncmesh-fn-test-'));
let cfg: MeshConfig;
let mesh: MeshHandle;
let nodes: FunctionNode[];
let faasCli = '';
let rulesBefore = '';
/** The one-node test's second image in node-1's registry (the mesh-wide test deploys it). */
let meshqImage = '';

const say = (m: string) => process.stderr.write(`[functions test] ${m}\n`);

function nodePid(id: string): number {
  const rec = readState(join(stateRoot, name))!.processes.find((p) => p.role === FAASD_NODE_ROLE && p.node === id);
  assert.ok(rec, `a node process for ${id}`);
  return rec.pid;
}

async function pollUntil<T>(what: string, deadlineMs: number, check: () => Promise<T | null | false>): Promise<T> {
  const end = Date.now() + deadlineMs;
  let last = '';
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > end) assert.fail(`${what}: not within ${deadlineMs} ms${last ? ` (last error: ${last})` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** faas-cli against one node's gateway (logged in by before()). */
function faas(node: FunctionNode, args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
  return run(faasCli, [...args, '--gateway', node.gatewayUrl], {
    timeoutMs: 240_000,
    ...(input === undefined ? {} : { input }),
    env: { ...process.env, HOME: work },
  });
}

async function faasFails(node: FunctionNode, args: string[]): Promise<string> {
  try {
    await faas(node, args);
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail(`faas-cli ${args.join(' ')} should have failed`);
}

async function invoke(
  node: FunctionNode,
  fn: string,
  opts: { method?: string; body?: string; query?: string; timeoutMs?: number } = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${node.gatewayUrl}/function/${fn}${opts.query ?? ''}`, {
    method: opts.method ?? 'GET',
    ...(opts.body === undefined ? {} : { body: opts.body }),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
  });
  return { status: res.status, text: await res.text() };
}

/** The code of a coded JSON error answer (`{"errors":[{"message","extensions":{"code"}}]}`). */
function codeOf(text: string): string | undefined {
  return (JSON.parse(text) as { errors?: { extensions?: { code?: string } }[] }).errors?.[0]?.extensions?.code;
}

async function functionNames(node: FunctionNode): Promise<string[]> {
  return (await new GatewayClient(node.gatewayUrl, node.basicAuth).functions()).map((f) => f.name);
}

/** The node's registry credentials as a file (what topology.json's registry_auth_file is). */
function authFileOf(i: number): string {
  return mesh.topology.nodes[i]!.registry_auth_file!;
}

before(async () => {
  if (skip) return;
  rulesBefore = iptablesRules();
  faasCli = (await run(join(REPO_ROOT, 'hack', 'faas-cli.sh'), [], { timeoutMs: 900_000 })).stdout.trim();
  cfg = loadConfig({ MESH_NAME: name, MESH_NODES: '3', MESH_RUNTIME: 'faasd', MESH_STATE_DIR: stateRoot, MESH_LATENCY: 'regional', TOXIPROXY_BIN });
  const t0 = Date.now();
  mesh = await up(cfg, { progress: say, loadData: false });
  say(`3-node faasd mesh up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  nodes = nodesFromTopology(mesh.topology);
  for (const n of nodes) await faas(n, ['login', '--username', n.basicAuth.split(':')[0]!, '--password-stdin'], n.basicAuth.split(':').slice(1).join(':'));
  cpSync(join(REPO_ROOT, 'template'), join(work, 'template'), { recursive: true });
});

after(async () => {
  if (skip) return;
  await down(stateRoot, name);
  rmSync(stateRoot, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
  assert.equal(iptablesRules(), rulesBefore, 'no iptables rule left behind');
});

test('functions - every node has a registry: topology.json names it and its credentials; they are refused when wrong', { skip }, async () => {
  for (const [i, n] of mesh.topology.nodes.entries()) {
    assert.equal(n.registry, `${n.address}:5000`);
    assert.match(readFileSync(authFileOf(i), 'utf8'), /^syncmesh:[A-Za-z0-9]{40}$/);
    assert.equal((await fetch(`http://${n.registry}/v2/`)).status, 401, 'no anonymous access');
  }
  const wrong = { ...nodes[0]!, registryAuth: 'syncmesh:not-the-password' };
  await assert.rejects(
    deployFunction([wrong], { name: 'never', image: `oci-archive:${join(images, 'miso-counter.oci.tar')}`, target: 'never:1' }),
    (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_FN_REGISTRY' && /refused the credentials/.test(e.message),
  );
  assert.ok(!(await functionNames(nodes[0]!)).includes('never'), 'nothing deployed');
});

test('functions - one node with faas-cli: template, build without Docker, push, deploy, invoke, update, remove', { skip }, async () => {
  const n1 = nodes[0]!;
  // faas-cli new works in the current folder, where ./template holds the repository's templates
  await run('bash', ['-c', 'cd "$1" && "$2" new --lang syncmesh-query-node20 meshq', 'new', work, faasCli], {
    timeoutMs: 60_000,
    env: { ...process.env, HOME: work },
  });
  const stack = existsSync(join(work, 'stack.yaml')) ? join(work, 'stack.yaml') : join(work, 'meshq.yml');
  const build = async (tag: string) => {
    const out = (
      await run(join(REPO_ROOT, 'hack', 'fn-build.sh'), ['-f', stack, '--registry', n1.registry, '--auth-file', authFileOf(0), '--tag', tag], {
        timeoutMs: 600_000,
      })
    ).stdout;
    return out.trim().split(/\s+/)[1]!;
  };
  const t0 = Date.now();
  const ref1 = await build('1');
  say(`meshq built and pushed as ${ref1} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await faas(n1, ['deploy', '--image', ref1, '--name', 'meshq']);
  const answer = await pollUntil('meshq answers', EVENTUALLY_MS, async () => {
    const r = await invoke(n1, 'meshq', { query: '?start=2017-07-01T00:00:00Z&end=2017-07-02T00:00:00Z' });
    return r.status === 200 ? (JSON.parse(r.text) as { count: number }) : false;
  });
  assert.equal(typeof answer.count, 'number', 'the mesh answered through the node function');
  const bad = await invoke(n1, 'meshq', { query: '?start=bad' });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(codeOf(bad.text), 'EDGE_MISO_SDK_REFUSED', "the template's context.fail: the SDK's coded JSON error");
  // faas-cli invoke and describe
  const viaCli = await faas(n1, ['invoke', 'meshq', '--query', 'start=2017-07-01T00:00:00Z', '--query', 'end=2017-07-02T00:00:00Z'], '');
  assert.match(viaCli.stdout, /"count":/);
  assert.match((await faas(n1, ['describe', 'meshq'])).stdout, new RegExp(ref1.replace(/[.]/g, '\\.')));
  // update: a new handler, a new image
  const handler = join(work, 'meshq', 'handler.js');
  writeFileSync(
    handler,
    readFileSync(handler, 'utf8').replace(
      'return context.status(200).succeed(answer.data.sensorsAggregate);',
      'return context.status(200).succeed({ ...answer.data.sensorsAggregate, version: 2 });',
    ),
  );
  const ref2 = await build('2');
  meshqImage = ref2;
  await faas(n1, ['deploy', '--image', ref2, '--name', 'meshq']);
  await pollUntil('meshq version 2 answers', EVENTUALLY_MS, async () => {
    const r = await invoke(n1, 'meshq');
    return r.status === 200 && (JSON.parse(r.text) as { version?: number }).version === 2;
  });
  // the node's own function cannot be replaced by a user's: clear error, syncmesh-fn still serves
  // faas-cli shows only the status; the gateway's API answer says why
  const clash = await faasFails(n1, ['deploy', '--image', ref2, '--name', 'syncmesh-fn']);
  assert.match(clash, /status code: 400/);
  const clashApi = await new GatewayClient(n1.gatewayUrl, n1.basicAuth).request('PUT', '/system/functions', { service: 'syncmesh-fn', image: ref2 });
  assert.equal(clashApi.status, 400, clashApi.text);
  assert.match(clashApi.text, /one of this node's own functions/);
  assert.equal((await invoke(n1, 'syncmesh-fn/readyz')).status, 200, 'syncmesh-fn untouched');
  // an image for another architecture: refused by the provider, nothing deployed
  const other = process.arch === 'arm64' ? 'amd64' : 'arm64';
  const ctr = (await run('buildah', ['from', '--arch', other, 'scratch'])).stdout.trim();
  try {
    await run('buildah', ['config', '--arch', other, '--entrypoint', '["/hello"]', ctr]);
    await run('buildah', ['commit', '--quiet', ctr, `localhost/other-arch:1`]);
  } finally {
    await run('buildah', ['rm', ctr]);
  }
  const auth = join(work, 'auth.json');
  writeFileSync(auth, JSON.stringify({ auths: { [n1.registry]: { auth: Buffer.from(n1.registryAuth).toString('base64') } } }), { mode: 0o600 });
  await run('buildah', ['push', '--quiet', '--authfile', auth, '--tls-verify=false', 'localhost/other-arch:1', `docker://${n1.registry}/other-arch:1`]);
  const archErr = await faasFails(n1, ['deploy', '--image', `${n1.registry}/other-arch:1`, '--name', 'other-arch']);
  assert.match(archErr, /status code: [45]\d\d/);
  const archApi = await new GatewayClient(n1.gatewayUrl, n1.basicAuth).request('POST', '/system/functions', {
    service: 'other-arch',
    image: `${n1.registry}/other-arch:1`,
  });
  assert.ok(archApi.status >= 400, `${archApi.status} ${archApi.text}`);
  assert.match(archApi.text, new RegExp(`is for linux/${other}; this node runs linux/${process.arch === 'arm64' ? 'arm64' : 'amd64'}`));
  assert.ok(!(await functionNames(n1)).includes('other-arch'), 'nothing half-deployed');
  // remove
  await faas(n1, ['remove', 'meshq']);
  await pollUntil('meshq gone', 60_000, async () => !(await functionNames(n1)).includes('meshq'));
});

test('functions - mesh-wide: a named subset, a node that joins afterwards, update, remove; an unknown node and a full registry change nothing', {
  skip,
}, async () => {
  const [n1, n2, n3] = nodes as [FunctionNode, FunctionNode, FunctionNode];
  // the operator pushed once, to node-1's registry: the one-node test's image
  assert.ok(meshqImage, 'needs the image the one-node test built and pushed');
  const spec = { name: 'meshq-all', image: meshqImage };
  assert.throws(
    () => nodesFromTopology(mesh.topology, ['node-1', 'node-9']),
    (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_UNKNOWN_NODE' && /node-9/.test(e.message),
  );
  // a registry out of disk on node-2: a 24 MB tmpfs under its storage (the image needs ~48 MB)
  const reg2 = '/var/lib/faasd/registry';
  await inNode(nodePid(n2.id), ['mount', '-t', 'tmpfs', '-o', 'size=24m,uid=10001,gid=10001,mode=0750', 'registry-quota', reg2]);
  const restartRegistry = async (node: FunctionNode) => {
    const pid = (await inNode(nodePid(node.id), ['ctr', '-n', 'openfaas', 'tasks', 'ls'])).stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .find((f) => f[0] === 'registry')?.[1];
    if (pid) process.kill(Number(pid), 'SIGKILL');
    await pollUntil(`${node.id}'s registry restarted`, 60_000, async () => {
      const r = await fetch(`http://${node.registry}/v2/`, { headers: { authorization: `Basic ${Buffer.from(node.registryAuth).toString('base64')}` } });
      return r.status === 200;
    });
  };
  try {
    await restartRegistry(n2);
    await assert.rejects(
      deployFunction([n1, n2], spec),
      (e: unknown) => e instanceof MeshError && e.code === 'EDGE_MESH_FN_REGISTRY' && /node-2/.test(e.message),
    );
    for (const n of [n1, n2]) assert.ok(!(await functionNames(n)).includes('meshq-all'), `nothing deployed on ${n.id}`);
  } finally {
    await inNode(nodePid(n2.id), ['umount', '-l', reg2]);
    await restartRegistry(n2);
  }
  // a named subset: node-1 and node-2
  const t0 = Date.now();
  const out = await deployFunction([n1, n2], spec, { progress: say });
  say(`meshq-all on node-1 and node-2 in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  assert.deepEqual(
    out.map((o) => [o.node, o.action]),
    [
      ['node-1', 'created'],
      ['node-2', 'created'],
    ],
  );
  assert.ok(!(await functionNames(n3)).includes('meshq-all'));
  // node-3 joins the function mesh afterwards: it gets the mesh's functions from its peers' registries
  const joined = await syncNode(n3, [n1, n2], { progress: say });
  assert.deepEqual(
    joined.map((o) => o.node),
    ['node-3'],
  );
  // its first mesh query may fail while its peers' links warm up (the handler's 502), as in the one-node test
  const r3 = await pollUntil('meshq-all answers on node-3', EVENTUALLY_MS, async () => {
    const r = await invoke(n3, 'meshq-all');
    return r.status === 200 ? r : false;
  });
  assert.equal((JSON.parse(r3.text) as { version: number }).version, 2);
  // update everywhere, then remove everywhere
  const upd = await deployFunction(nodes, { ...spec, envVars: { LOG_LEVEL: 'warn' } }, { progress: say });
  assert.deepEqual(
    upd.map((o) => o.action),
    ['updated', 'updated', 'updated'],
  );
  const removed = await removeFunction(nodes, 'meshq-all', { progress: say });
  assert.deepEqual(
    removed.map((o) => o.action),
    ['removed', 'removed', 'removed'],
  );
  await assert.rejects(removeFunction([n1], 'syncmesh-fn'), (e: unknown) => e instanceof MeshError && /own functions/.test(e.message));
});

test('functions - the stateful counter on 3 nodes: adds converge everywhere, nothing acknowledged is lost across kill -9; no label: a clear error', {
  skip,
}, async () => {
  const [n1, n2, n3] = nodes as [FunctionNode, FunctionNode, FunctionNode];
  const auth = join(work, 'auth2.json');
  writeFileSync(auth, JSON.stringify({ auths: { [n1.registry]: { auth: Buffer.from(n1.registryAuth).toString('base64') } } }), { mode: 0o600 });
  const tPush = Date.now();
  await run('skopeo', [
    'copy',
    '--quiet',
    '--all',
    '--authfile',
    auth,
    '--dest-tls-verify=false',
    `oci-archive:${join(images, 'miso-counter.oci.tar')}`,
    `docker://${n1.registry}/miso-counter:1`,
  ]);
  await deployFunction(nodes, { name: 'miso-counter', image: `${n1.registry}/miso-counter:1`, labels: { 'com.syncmesh.miso': 'true' } }, { progress: say });
  say(`miso-counter pushed to node-1 and ready on all 3 nodes ${((Date.now() - tPush) / 1000).toFixed(1)} s after the push began`);

  let acked = 0;
  let failed = 0;
  const add = async (node: FunctionNode, k: number) => {
    try {
      const r = await invoke(node, 'miso-counter', { method: 'POST', body: String(k), query: '?object=issue26', timeoutMs: 20_000 });
      if (r.status === 200) acked += k;
      else failed += k;
    } catch {
      failed += k;
    }
  };
  const round = async (times: number) => {
    for (let i = 0; i < times; i++) await Promise.all([add(n1, 1), add(n2, 2), add(n3, 3)]);
  };
  await round(10);
  // kill -9 of node-2's function container task (the gateway scales it up again), then of node-3's agent
  const fnPid = (await inNode(nodePid(n2.id), ['ctr', '-n', 'openfaas-fn', 'tasks', 'ls'])).stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[0]?.startsWith('miso-counter') && f[2] === 'RUNNING')?.[1];
  assert.ok(fnPid, 'a running miso-counter task on node-2');
  process.kill(Number(fnPid), 'SIGKILL');
  await round(5);
  const agentPid = (await inNode(nodePid(n3.id), ['ctr', '-n', 'openfaas', 'tasks', 'ls'])).stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[0] === 'miso-agent')?.[1];
  assert.ok(agentPid, 'a miso-agent task on node-3');
  process.kill(Number(agentPid), 'SIGKILL');
  await round(5);
  // every node reads at least every acknowledged add (an unacknowledged one may have happened)
  const tLast = Date.now();
  const totals = await pollUntil(`every node reads the ${acked} acknowledged adds`, EVENTUALLY_MS, async () => {
    const seen = await Promise.all(
      nodes.map(async (n) => (JSON.parse((await invoke(n, 'miso-counter', { query: '?object=issue26' })).text) as { totalSum: number }).totalSum),
    );
    return seen.every((v) => v === seen[0] && v >= acked) ? seen : false;
  });
  say(`counter: ${acked} acknowledged (${failed} not), every node reads ${totals[0]} ${Date.now() - tLast} ms after the last add`);
  assert.ok(totals[0]! <= acked + failed, `no add counted twice: ${totals[0]} <= ${acked + failed}`);
  // bad input: the SDK's coded 400 from the function's context.fail, nothing added
  const badAdd = await invoke(n1, 'miso-counter', { method: 'POST', body: '-1', query: '?object=issue26' });
  assert.equal(badAdd.status, 400, badAdd.text);
  assert.equal(codeOf(badAdd.text), 'EDGE_MISO_SDK_REFUSED');

  // the same image without the label: the SDK answers at once with what is missing (the first
  // calls may reach the gateway before the new function serves: they get the gateway's empty 5xx)
  await deployFunction([n1], { name: 'counter-nolabel', image: `${n1.registry}/miso-counter:1` });
  let t0 = Date.now();
  const r = await pollUntil('counter-nolabel answers', EVENTUALLY_MS, async () => {
    t0 = Date.now();
    const got = await invoke(n1, 'counter-nolabel', { method: 'POST', body: '1' });
    return got.text.trim() === '' ? false : got;
  });
  assert.equal(r.status, 503, r.text);
  assert.equal(codeOf(r.text), 'EDGE_MISO_SDK_NOT_CONNECTED');
  assert.match(r.text, /com\.syncmesh\.miso=true/);
  assert.ok(Date.now() - t0 < 5_000, 'answered, not hung');
  await removeFunction(nodes, 'counter-nolabel');
});

test('functions - scale to zero through the gateway: the Community Edition gateway keeps 1 replica and the function serves', { skip }, async () => {
  // gateway 0.27.5 (gateway/scaling/ranges.go) raises replicas below 1 to 1: scale to zero is OpenFaaS Pro's
  const n1 = nodes[0]!;
  assert.ok(meshqImage, 'needs the image the one-node test built and pushed');
  await faas(n1, ['deploy', '--image', meshqImage, '--name', 'meshq-scale']);
  try {
    await pollUntil('meshq-scale answers', EVENTUALLY_MS, async () => (await invoke(n1, 'meshq-scale')).status === 200);
    const gw = new GatewayClient(n1.gatewayUrl, n1.basicAuth);
    const scaled = await gw.request('POST', '/system/scale-function/meshq-scale', { serviceName: 'meshq-scale', replicas: 0 });
    assert.ok(scaled.status >= 200 && scaled.status < 300, `scale to 0: ${scaled.status} ${scaled.text}`);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    assert.equal((await gw.functions()).find((f) => f.name === 'meshq-scale')?.replicas, 1, 'still one replica');
    assert.equal((await invoke(n1, 'meshq-scale')).status, 200, 'still serving');
  } finally {
    await faas(n1, ['remove', 'meshq-scale']).catch(() => undefined);
  }
});
