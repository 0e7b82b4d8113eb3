/**
 * The faasd runtime of the local mesh (MESH_RUNTIME=faasd): every node is a whole appliance in
 * its own network + mount namespace (images/node/node-run.sh: containerd, journald, faasd
 * provider, faasd up with the node's docker-compose.yaml), the Syncmesh function deployed
 * through the gateway's REST API, both rendered from the node description images/node/node.yml
 * by the collection's one renderer (node_stack.py, run as a program), the function's secrets in
 * faasd's secret store. Registration, data loading, links and topology are the process runtime's own code.
 *
 * Order of `upFaasd` (state written before each step, so `down` can undo any prefix): preflight
 * -> bridge -> toxiproxy -> per node: namespace, node-prepare.sh, node-run.sh, gateway ready,
 * MongoDB ready, data, secrets (mesh-secret, write-key, mongodb-uri), function deployed and ready ->
 * registries (signed v2 for each node's id) -> link profile -> topology.json (with
 * "runtime": "faasd", "gateway_url", "basic_auth_file" and the mesh's "write_key_file").
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { MongoClient } from 'mongodb';
import { REPO_ROOT, type MeshConfig } from './config.js';
import { MeshError, squashError } from './errors.js';
import { loadNodeData } from './load.js';
import { moduleLogger } from './log.js';
import { abandonStart, beginMesh, finishMesh, linksProgress, planFor, preflight, startToxiproxy, type MeshHandle, type UpOptions } from './mesh.js';
import { misoPeers, writeKeyFileFor } from './services.js';
import { createMeshBridge, createNodeNetwork } from './network.js';
import { linkProxies, type MeshPlan, type NodePlan } from './plan.js';
import { writeState, type MeshState } from './state.js';
import { httpOk, isAlive, pool, pssBytes, rssBytes, run, startDetached, tail, waitFor, type ProcessRecord } from '@syncmesh-edge/lab';

const log = moduleLogger('faasd');

/** Role of a node's node-run.sh process in the mesh state. */
export const FAASD_NODE_ROLE = 'faasd-node';
/** The function every node serves, as named in stack.yml. */
export const FUNCTION_NAME = 'syncmesh-fn';
/** The function's own defaults (functions/syncmesh/src/config.ts), written out in stack.yml so an operator sees them. */
const FUNCTION_REQUEST_DEADLINE_MIN_MS = 20_000;
const FUNCTION_REQUEST_DEADLINE_MARGIN_MS = 5_000;
const FUNCTION_REPLAY_WINDOW_MS = 30_000;
/** Secret names OpenFaaS accepts (Kubernetes DNS-1123 labels). */
const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** One run of the node description's renderer (python3, a fraction of a second). */
const RENDER_TIMEOUT_MS = 30_000;
/** A node's whole start (image import, faasd up, deploy) on a busy 2-core host. */
const NODE_START_TIMEOUT_MS = 300_000;
/** SIGTERM to node-run.sh: faasd up removes its services, then containerd stops. */
const NODE_STOP_TIMEOUT_S = 60;
const GATEWAY_TIMEOUT_MS = 15_000;

export const FAASD_PATHS = {
  nodeDir: join(REPO_ROOT, 'images', 'node'),
  prepare: join(REPO_ROOT, 'images', 'node', 'node-prepare.sh'),
  run: join(REPO_ROOT, 'images', 'node', 'node-run.sh'),
  down: join(REPO_ROOT, 'images', 'node', 'node-down.sh'),
  /** The node description: services, functions, secrets, folders (images/node/README.md). */
  description: join(REPO_ROOT, 'images', 'node', 'node.yml'),
  /** Its one renderer, in the Ansible collection (the appliance and the roles use it too). */
  renderer: join(REPO_ROOT, 'ansible', 'collections', 'ansible_collections', 'syncmesh', 'edge', 'plugins', 'module_utils', 'node_stack.py'),
  images: join(REPO_ROOT, '.cache', 'images'),
} as const;

/** The node's faasd state directory (containerd root, /var/lib/faasd, journal...). */
export function faasdStateDir(node: NodePlan): string {
  return join(node.dir, 'faasd');
}
/** The address of a compose service in a faasd node (`faasd up` writes `var-lib-faasd/hosts` below the node's faasd state, faasdStateDir). */
export function serviceAddress(stateDir: string, service: string): string {
  const hosts = readFileSync(join(stateDir, 'var-lib-faasd', 'hosts'), 'utf8');
  const line = hosts.split('\n').find((l) => l.trim().split(/\s+/).slice(1).includes(service));
  if (!line) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `no address for ${service} in the node's hosts file`);
  return line.trim().split(/\s+/)[0]!;
}
export function basicAuthFile(node: NodePlan): string {
  return join(faasdStateDir(node), 'basic-auth');
}
export function gatewayUrl(node: NodePlan): string {
  return `http://${node.addr}:8080`;
}

// ---------------------------------------------------------------------------------------------
// the node description -> faasd's files and the gateway's deployment JSON (node_stack.py)

/** What POST/PUT /system/functions takes (OpenFaaS FunctionDeployment), as node_stack.py renders it. */
export interface FunctionDeployment {
  service: string;
  image: string;
  envProcess?: string;
  envVars: Record<string, string>;
  secrets: string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  limits?: { memory?: string; cpu?: string };
  requests?: { memory?: string; cpu?: string };
}

/**
 * Renders the node description (`descriptionText`, default images/node/node.yml) with `vars`:
 * `compose` gives faasd's docker-compose.yaml, `functions` the deployments as canonical JSON text
 * (the golden files' form). The renderer refuses an unknown ${NAME}, a value that is not an input
 * and an input without a value: EDGE_MESH_FAASD_DEPLOY saying each problem.
 */
export async function renderNode(what: 'compose' | 'functions', vars: Readonly<Record<string, string>>, descriptionText?: string): Promise<string> {
  const args = [FAASD_PATHS.renderer, what, '--description', descriptionText === undefined ? FAASD_PATHS.description : '-'];
  for (const [k, v] of Object.entries(vars)) args.push('--value', `${k}=${v}`);
  try {
    return (await run('python3', args, { timeoutMs: RENDER_TIMEOUT_MS, ...(descriptionText === undefined ? {} : { input: descriptionText }) })).stdout;
  } catch (err) {
    const why = (err as Error).message.split('node_stack: ').slice(1).join('node_stack: ') || (err as Error).message;
    throw new MeshError('EDGE_MESH_FAASD_DEPLOY', `the node description is invalid: ${why}`, { cause: err });
  }
}

/** The node description's functions for these values (see renderNode). */
export async function renderFunctions(vars: Readonly<Record<string, string>>, descriptionText?: string): Promise<FunctionDeployment[]> {
  return JSON.parse(await renderNode('functions', vars, descriptionText)) as FunctionDeployment[];
}

// ---------------------------------------------------------------------------------------------
// the gateway's REST API

export interface GatewayFunction {
  name: string;
  image: string;
  replicas?: number;
  availableReplicas?: number;
  labels?: Record<string, string>;
  envVars?: Record<string, string>;
  secrets?: string[];
}

export class GatewayClient {
  private readonly authHeader: string;

  constructor(
    readonly base: string,
    basicAuth: string,
  ) {
    this.authHeader = `Basic ${Buffer.from(basicAuth).toString('base64')}`;
  }

  static forNode(node: NodePlan): GatewayClient {
    return new GatewayClient(gatewayUrl(node), readFileSync(basicAuthFile(node), 'utf8').trim());
  }

  async request(method: string, path: string, body?: unknown, timeoutMs = GATEWAY_TIMEOUT_MS): Promise<{ status: number; text: string }> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: { authorization: this.authHeader, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `${method} ${this.base}${path} failed: ${(err as Error).message}`, { cause: err });
    }
    return { status: res.status, text: await res.text() };
  }

  private async json<T>(path: string): Promise<T> {
    const r = await this.request('GET', path);
    if (r.status !== 200) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `GET ${this.base}${path}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
    return JSON.parse(r.text) as T;
  }

  info(): Promise<{ provider: { provider: string; version: { release: string; sha: string } }; version: { release: string; sha: string }; arch?: string }> {
    return this.json('/system/info');
  }

  functions(): Promise<GatewayFunction[]> {
    return this.json('/system/functions');
  }

  async secretNames(): Promise<string[]> {
    return (await this.json<{ name: string }[]>('/system/secrets')).map((x) => x.name);
  }

  /** Creates or replaces a secret in faasd's secret store (the value never goes into env or logs). */
  async upsertSecret(name: string, value: string): Promise<void> {
    if (!SECRET_NAME.test(name)) throw new MeshError('EDGE_MESH_FAASD_DEPLOY', `secret name '${name}' is invalid: use a lowercase DNS label (a-z, 0-9, -)`);
    const r = await this.request('POST', '/system/secrets', { name, value });
    if (r.status === 200 || r.status === 201 || r.status === 202) return;
    const u = await this.request('PUT', '/system/secrets', { name, value });
    if (u.status >= 200 && u.status < 300) return;
    throw new MeshError(
      'EDGE_MESH_FAASD_DEPLOY',
      `the gateway refused secret '${name}': HTTP ${r.status} ${r.text.trim().slice(0, 200)}; update: HTTP ${u.status} ${u.text.trim().slice(0, 200)}`,
    );
  }

  /** Deploys (POST) or updates (PUT) a function; a refusal is EDGE_MESH_FAASD_DEPLOY with the gateway's message. */
  async deploy(fn: FunctionDeployment): Promise<'created' | 'updated'> {
    const exists = (await this.functions()).some((f) => f.name === fn.service);
    const r = await this.request(exists ? 'PUT' : 'POST', '/system/functions', fn, 120_000);
    if (r.status >= 200 && r.status < 300) return exists ? 'updated' : 'created';
    throw new MeshError(
      'EDGE_MESH_FAASD_DEPLOY',
      `the gateway refused to ${exists ? 'update' : 'deploy'} ${fn.service} (image ${fn.image}): HTTP ${r.status}: ${r.text.trim().slice(0, 300)}`,
    );
  }

  /** The function's log lines through /system/logs (journald on the node). */
  async logs(name: string, opts: { tail?: number; sinceIso?: string } = {}): Promise<{ text: string; timestamp: string; instance: string }[]> {
    const q = new URLSearchParams({ name, follow: 'false' });
    if (opts.tail !== undefined) q.set('tail', String(opts.tail));
    if (opts.sinceIso) q.set('since', opts.sinceIso);
    const r = await this.request('GET', `/system/logs?${q.toString()}`);
    if (r.status !== 200) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `GET /system/logs for ${name}: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    return r.text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { text: string; timestamp: string; instance: string });
  }
}

// ---------------------------------------------------------------------------------------------
// one node

/** Runs a command in a running node's mount + network namespaces (e.g. ctr). */
export function inNode(nodePid: number, argv: readonly string[], timeoutMs = 60_000): Promise<{ stdout: string; stderr: string }> {
  return run('nsenter', ['-t', String(nodePid), '-m', '-n', ...argv], { timeoutMs });
}

/** The CNI address of the function's serving task (the newest running syncmesh-fn container). */
export async function functionTaskAddress(nodePid: number): Promise<string> {
  const { stdout } = await inNode(nodePid, ['ctr', '-n', 'openfaas-fn', 'tasks', 'ls']);
  const rows = stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => (f[0] === FUNCTION_NAME || f[0]?.startsWith(`${FUNCTION_NAME}.`)) && f[2] === 'RUNNING')
    .sort((a, b) => (a[0]! < b[0]! ? 1 : -1));
  const pid = rows[0]?.[1];
  if (!pid) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `no running ${FUNCTION_NAME} task: ${stdout}`);
  const ip = (await run('nsenter', ['-t', pid, '-n', 'ip', '-4', '-o', 'addr', 'show', 'scope', 'global'], { timeoutMs: 10_000 })).stdout.match(
    /inet (\d+\.\d+\.\d+\.\d+)/,
  )?.[1];
  if (!ip) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `no address for the ${FUNCTION_NAME} task ${pid}`);
  return ip;
}

/** The values of the node description's function inputs for one node. */
export function stackVars(cfg: MeshConfig, node: NodePlan, forwardMode: string): Record<string, string> {
  const requestDeadlineMs = cfg.requestDeadlineMs ?? Math.max(FUNCTION_REQUEST_DEADLINE_MIN_MS, cfg.deadlineMs + FUNCTION_REQUEST_DEADLINE_MARGIN_MS);
  return {
    REQUEST_DEADLINE_MS: String(requestDeadlineMs),
    REPLAY_WINDOW_MS: String(cfg.replayWindowMs ?? FUNCTION_REPLAY_WINDOW_MS),
    // the watchdog must not cut a request the function still answers itself (504 at the deadline)
    WATCHDOG_TIMEOUT: `${Math.ceil((requestDeadlineMs + FUNCTION_REQUEST_DEADLINE_MARGIN_MS) / 1000)}s`,
    FUNCTION_IMAGE: readFileSync(join(faasdStateDir(node), 'function-image'), 'utf8').trim(),
    NODE_ID: node.id,
    NODE_TIMEOUT_MS: String(cfg.nodeTimeoutMs),
    DEADLINE_MS: String(cfg.deadlineMs),
    FORWARD_MODE: forwardMode,
    LOG_LEVEL: cfg.nodeLogLevel,
  };
}

/**
 * Deploys the node's functions rendered from the node description (`descriptionText`, default
 * images/node/node.yml): each checked first (its image in the node, every secret it lists in the
 * node's faasd secrets folder, where node-prepare.sh put them), then the secrets stored through
 * /system/secrets, the functions deployed, and each waited for until it answers.
 */
export async function deployFunctions(
  cfg: MeshConfig,
  node: NodePlan,
  nodePid: number,
  forwardMode: string,
  descriptionText?: string,
  readyTimeoutMs = 120_000,
): Promise<FunctionDeployment[]> {
  const fns = await renderFunctions(stackVars(cfg, node, forwardMode), descriptionText);
  const gw = GatewayClient.forNode(node);
  const have = (await inNode(nodePid, ['ctr', '-n', 'openfaas-fn', 'images', 'ls', '-q'])).stdout.split('\n').map((s) => s.trim());
  const secretsDir = join(faasdStateDir(node), 'var-lib-faasd', 'secrets');
  const secrets = [...new Set(fns.flatMap((fn) => fn.secrets))];
  for (const fn of fns) {
    const missing = fn.secrets.filter((x) => !existsSync(join(secretsDir, x)));
    if (missing.length > 0) {
      throw new MeshError(
        'EDGE_MESH_FAASD_DEPLOY',
        `${fn.service} needs secret(s) ${missing.join(', ')}, which ${node.id}'s secrets folder ${secretsDir} does not have; node-prepare.sh writes every secret of the node description`,
      );
    }
    if (!have.includes(fn.image)) {
      throw new MeshError(
        'EDGE_MESH_FAASD_DEPLOY',
        `image ${fn.image} of ${fn.service} is not in ${node.id}'s containerd (namespace openfaas-fn; it has: ${have.filter(Boolean).join(', ') || 'none'}); import it first`,
      );
    }
  }
  // everything checked before anything changes: a bad input leaves the running function serving
  for (const name of secrets) await gw.upsertSecret(name, readFileSync(join(secretsDir, name), 'utf8').trim());
  for (const fn of fns) await gw.deploy(fn);
  for (const fn of fns) {
    await waitFor(`${fn.service} on ${node.id}`, () => httpOk(`${gatewayUrl(node)}/function/${fn.service}/readyz`, 2_000), readyTimeoutMs);
  }
  return fns;
}

/** Runs images/node/node-run.sh for `node` in its network namespace and a private mount namespace (start and restart). */
function launchNode(node: NodePlan, logFile: string): ProcessRecord {
  const stateDir = faasdStateDir(node);
  return startDetached(
    FAASD_NODE_ROLE,
    node.id,
    ['nsenter', `--net=/run/netns/${node.netns!}`, 'unshare', '--mount', '--propagation', 'private', FAASD_PATHS.run],
    logFile,
    {
      PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
      NODE_STATE: stateDir,
      NODE_CGROUP: node.netns!,
      NODE_IMAGES: join(stateDir, 'images.list'),
    },
  );
}

async function startNode(cfg: MeshConfig, plan: MeshPlan, node: NodePlan, state: MeshState, secretFile: string, signal?: AbortSignal): Promise<ProcessRecord> {
  const stateDir = faasdStateDir(node);
  mkdirSync(stateDir, { recursive: true });
  const peers = misoPeers(plan, node);
  const env = {
    NODE_STATE: stateDir,
    NODE_ID: node.id,
    NODE_ADDR: node.addr,
    MISO_PEERS: peers,
    MESH_SECRET_FILE: secretFile,
    WRITE_KEY_FILE: writeKeyFileFor(secretFile),
    MONGODB_PUBLISH: '0.0.0.0',
    LOG_LEVEL: cfg.nodeLogLevel,
    IMAGES_DIR: FAASD_PATHS.images,
  };
  await run('env', [...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'bash', FAASD_PATHS.prepare], { timeoutMs: 60_000 });
  const logFile = join(plan.stateDir, 'logs', `${node.id}.faasd.log`);
  const rec = launchNode(node, logFile);
  state.processes.push(rec);
  writeState(state);
  const alive = () => {
    if (signal?.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted`);
    if (!isAlive(rec))
      throw new MeshError(
        'EDGE_MESH_NODE_START',
        `faasd node ${node.id} stopped during start; last lines of ${logFile}:\n${tail(logFile, 8)}\nfaasd up: ${tail(join(stateDir, 'logs', 'faasd-up.log'), 5)}`,
      );
  };
  await waitFor(`gateway of ${node.id}`, () => httpOk(`${gatewayUrl(node)}/healthz`, 2_000), NODE_START_TIMEOUT_MS, alive);
  await waitFor(`MongoDB of ${node.id}`, () => mongoReady(node.mongoUri), NODE_START_TIMEOUT_MS, alive);
  return rec;
}

/**
 * Does MongoDB answer a ping at `uri`? (A TCP connect proves nothing on faasd: `faasd up`'s port
 * proxy accepts connections before the service behind it listens.)
 */
export async function mongoReady(uri: string, timeoutMs = 2_000): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs });
  try {
    await client.db('admin').command({ ping: 1 });
    return true;
  } catch (err) {
    squashError(err); // not up yet
    return false;
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------------------------------------
// the mesh

/** Brings a faasd mesh up; on any failure or abort removes everything it created and rethrows. */
export async function upFaasd(cfg: MeshConfig, opts: UpOptions = {}): Promise<MeshHandle> {
  const progress = opts.progress ?? (() => undefined);
  const plan = planFor(cfg);
  if (plan.isolation !== 'netns')
    throw new MeshError('EDGE_MESH_CONFIG', 'invalid configuration: MESH_RUNTIME=faasd needs network namespaces (run as root, MESH_ISOLATION=netns)');
  await preflight(cfg, plan, opts);
  for (const f of [FAASD_PATHS.prepare, FAASD_PATHS.run, FAASD_PATHS.description, FAASD_PATHS.renderer]) {
    if (!existsSync(f)) throw new MeshError('EDGE_MESH_TOOL_MISSING', `${f} is missing`);
  }
  if (!existsSync(join(FAASD_PATHS.images, 'syncmesh-fn.oci.tar')))
    throw new MeshError('EDGE_MESH_TOOL_MISSING', `the node images are missing in ${FAASD_PATHS.images} (run: make images faasd-bins)`);

  // the write key becomes the faasd secret write-key of every function
  const { secret, secretFile, state } = beginMesh(cfg, plan, 'faasd');
  const t0 = performance.now();
  const aborted = () => {
    if (opts.signal?.aborted) throw new MeshError('EDGE_MESH_INTERRUPTED', `start of mesh '${plan.name}' interrupted`);
  };
  try {
    progress(`bridge ${plan.bridge} ${plan.subnet} (host ${plan.hostAddr})`);
    await createMeshBridge(plan);
    progress(linksProgress(cfg, plan));
    const toxi = await startToxiproxy(cfg, plan, state);
    await toxi.createLinks(linkProxies(plan));
    aborted();

    let started = 0;
    await pool(plan.nodes, cfg.startConcurrency, async (node) => {
      aborted();
      const t = performance.now();
      mkdirSync(node.dir, { recursive: true });
      await createNodeNetwork(plan, node);
      const rec = await startNode(cfg, plan, node, state, secretFile, opts.signal);
      const tNode = performance.now();
      let loaded = '';
      if (opts.loadData !== false) loaded = `, ${await loadNodeData(cfg, node, cfg.dataDir ? join(cfg.dataDir, `${node.index}.csv`) : undefined)} readings`;
      await deployFunctions(cfg, node, rec.pid, cfg.forwardMode);
      started++;
      progress(
        `${node.id} ready at ${gatewayUrl(node)} (faasd up ${((tNode - t) / 1000).toFixed(1)} s, total ${((performance.now() - t) / 1000).toFixed(1)} s${loaded}) [${started}/${plan.nodes.length}]`,
      );
    });
    aborted();

    return await finishMesh(cfg, plan, state, toxi, secret, opts, aborted, t0, 'faasd mesh');
  } catch (err) {
    throw await abandonStart(cfg, plan, state, opts, err, 'faasd mesh');
  }
}

/**
 * Stops every faasd node of a mesh (node-down.sh: SIGTERM to node-run.sh, then whatever is left
 * in the node's cgroups is killed and the cgroups removed). Called by `down` before it removes
 * the namespaces. Idempotent.
 */
export async function stopFaasdNodes(state: MeshState, progress: (m: string) => void = () => undefined): Promise<number> {
  const recs = new Map(state.processes.filter((p) => p.role === FAASD_NODE_ROLE && p.node).map((p) => [p.node!, p]));
  const live = [...recs.values()].filter(isAlive).length;
  if (live > 0) progress(`stopping ${live} faasd nodes (faasd up, functions, provider, containerd)`);
  await Promise.all(
    state.plan.nodes.map(async (n) => {
      const rec = recs.get(n.id);
      const args = [FAASD_PATHS.down, n.netns!, ...(rec && isAlive(rec) ? [String(rec.pid)] : [])];
      try {
        await run('env', [`NODE_STOP_TIMEOUT_S=${NODE_STOP_TIMEOUT_S}`, 'bash', ...args], { timeoutMs: (NODE_STOP_TIMEOUT_S + 30) * 1000 });
      } catch (err) {
        log.warn({ err, node: n.id }, 'node-down.sh failed');
        progress(`${n.id}: ${(err as Error).message}`);
      }
    }),
  );
  return live;
}

/**
 * Restarts one faasd node as a power cycle would: node-run.sh stopped (faasd up removes its
 * services, containerd stops) and started again on the same state directory. MongoDB data, the
 * gateway's password, the secrets and the function's container survive; the function comes back
 * through scale from zero on its first request. Returns the seconds from the start until the
 * gateway, MongoDB and the function (ready) answered.
 */
export async function restartFaasdNode(state: MeshState, nodeId: string): Promise<{ gatewayS: number; mongoS: number; functionS: number }> {
  const node = state.plan.nodes.find((n) => n.id === nodeId);
  if (!node) throw new MeshError('EDGE_MESH_UNKNOWN_NODE', `'${nodeId}' is not a node of mesh '${state.name}'`);
  const old = state.processes.find((p) => p.role === FAASD_NODE_ROLE && p.node === nodeId);
  await run('env', [`NODE_STOP_TIMEOUT_S=${NODE_STOP_TIMEOUT_S}`, 'bash', FAASD_PATHS.down, node.netns!, ...(old && isAlive(old) ? [String(old.pid)] : [])], {
    timeoutMs: (NODE_STOP_TIMEOUT_S + 30) * 1000,
  });
  const t0 = performance.now();
  const logFile = join(state.plan.stateDir, 'logs', `${node.id}.faasd.log`);
  const rec = launchNode(node, logFile);
  state.processes = state.processes.filter((p) => p !== old);
  state.processes.push(rec);
  writeState(state);
  const alive = () => {
    if (!isAlive(rec))
      throw new MeshError('EDGE_MESH_NODE_START', `faasd node ${node.id} stopped during restart; last lines of ${logFile}:\n${tail(logFile, 8)}`);
  };
  const since = () => (performance.now() - t0) / 1000;
  await waitFor(`gateway of ${node.id}`, () => httpOk(`${gatewayUrl(node)}/healthz`, 2_000), NODE_START_TIMEOUT_MS, alive);
  const gatewayS = since();
  await waitFor(`MongoDB of ${node.id}`, () => mongoReady(node.mongoUri), NODE_START_TIMEOUT_MS, alive);
  const mongoS = since();
  // a function scaled up from zero while MongoDB is still loading its data keeps reconnecting
  // (functions/syncmesh main.ts) and answers /readyz once the database does
  await waitFor(`${FUNCTION_NAME} on ${node.id}`, () => httpOk(`${gatewayUrl(node)}/function/${FUNCTION_NAME}/readyz`, 5_000), NODE_START_TIMEOUT_MS, alive);
  return { gatewayS, mongoS, functionS: since() };
}

// ---------------------------------------------------------------------------------------------
// status: memory per service from the node's cgroups

/** The memory hierarchy's directory of a node's cgroup (below this process's own memory cgroup). */
function nodeMemoryCgroup(node: NodePlan): string | null {
  try {
    const own = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => /^\d+:memory:/.test(l));
    const rel = own ? own.split(':').slice(2).join(':') : '';
    const dir = join('/sys/fs/cgroup/memory', rel, node.netns!);
    return existsSync(dir) ? dir : null;
  } catch (err) {
    squashError(err); // no cgroup v1 memory hierarchy here
    return null;
  }
}

export interface ServiceMemory {
  /** supervisor (containerd, provider, faasd up, journald, shims, log shippers) or a container name */
  service: string;
  pids: number[];
  pssBytes: number;
  rssBytes: number;
}

/** The processes of each service of one faasd node (the supervisor, then each container), from its cgroups. */
export function faasdNodePids(node: NodePlan): { service: string; pids: number[] }[] {
  const root = nodeMemoryCgroup(node);
  if (!root) return [];
  const groups: [string, string][] = [['supervisor', join(root, 'supervisor')]];
  for (const ns of ['openfaas', 'openfaas-fn']) {
    const d = join(root, ns);
    if (!existsSync(d)) continue;
    for (const name of readdirSafe(d)) groups.push([name, join(d, name)]);
  }
  return groups.map(([service, dir]) => {
    let pids: number[] = [];
    try {
      pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch (err) {
      squashError(err); // the container is being replaced
    }
    return { service, pids };
  });
}

/** PSS/RSS per service of one faasd node, from the processes in its cgroups. */
export function faasdNodeMemory(node: NodePlan): ServiceMemory[] {
  return faasdNodePids(node).map(({ service, pids }) => ({
    service,
    pids,
    pssBytes: pids.reduce((s, p) => s + (pssBytes(p) ?? 0), 0),
    rssBytes: pids.reduce((s, p) => s + (rssBytes(p) ?? 0), 0),
  }));
}

/** What a supervisor process is, from its command line (the supervisor cgroup holds them all). */
function supervisorRole(pid: number): string {
  let argv: string[] = [];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch (err) {
    squashError(err); // gone
  }
  const exe = basename(argv[0] ?? '');
  // the log shippers are faasd started by the shims with no arguments (containerd binary logging)
  if (exe === 'faasd') return { provider: 'provider', up: 'faasd-up', '': 'log-shipper' }[argv[1] ?? ''] ?? 'faasd';
  if (exe.startsWith('containerd-shim')) return 'shims';
  if (exe === 'containerd') return 'containerd';
  if (exe.includes('journald')) return 'journald';
  return 'node-run';
}

/**
 * The processes of one faasd node as named groups for a CPU meter (bench-kit's CpuGroup): one
 * per container (the task's processes), and the supervisor's split by role (provider, faasd-up,
 * log-shipper, shims, containerd, journald, node-run).
 */
export function faasdNodeCpuGroups(node: NodePlan): { name: string; pids: number[] }[] {
  const groups = new Map<string, number[]>();
  for (const svc of faasdNodePids(node)) {
    if (svc.service !== 'supervisor') {
      if (svc.pids.length > 0) groups.set(svc.service, svc.pids);
      continue;
    }
    for (const pid of svc.pids) {
      const role = supervisorRole(pid);
      groups.set(role, [...(groups.get(role) ?? []), pid]);
    }
  }
  return [...groups].map(([name, pids]) => ({ name, pids }));
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir).filter((n) => existsSync(join(dir, n, 'cgroup.procs')));
  } catch (err) {
    squashError(err);
    return [];
  }
}
