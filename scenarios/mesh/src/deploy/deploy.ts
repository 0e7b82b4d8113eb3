/**
 * Users' functions on a mesh of faasd nodes, without the internet: an image goes into every target
 * node's own registry (each node's registry credentials), then the function is deployed through
 * each node's gateway (its basic auth), and waited for until it answers. One call deploys to every
 * node or a named subset; `syncNode` gives a node that joined later the mesh's functions; the
 * operator CLI calls the same functions.
 *
 *   deployFunction(nodes, spec, opts)   image -> every target's registry -> every target's gateway
 *   removeFunction(nodes, name)         from every target's gateway
 *   syncNode(target, from, opts)        the mesh functions of `from` onto `target`
 *   nodesFromTopology(topology, ids?)   the targets from a topology.json (.mesh/topology.json)
 *
 * How images travel: skopeo copies the image (every architecture of an index) from where it is —
 * one node's registry (the usual case: the operator pushed it there once), a local OCI archive or
 * containers-storage — into each target node's registry, authenticated at both ends with that
 * node's own registry user (a temporary auth file, mode 0600, removed afterwards: credentials
 * never appear on a command line or in a log). Node registries speak plain HTTP with basic auth,
 * like the gateways (images/node/README.md).
 *
 * Nothing half-deployed: every input is checked and every target's gateway and registry are
 * proven (credentials, reachability, a clash with a node's own function) before anything
 * changes; the image reaches every target's registry before any gateway deploys; the deploys
 * run one node after the other, and a refusal (an image for another architecture, a missing
 * secret, ...) rolls back the nodes already done (a new function removed, an updated one put back
 * as it was).
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, waitFor } from '@syncmesh-edge/lab';
import { MeshError } from '../errors.js';
import { GatewayClient, type FunctionDeployment, type GatewayFunction } from '../runtime/faasd.js';
import type { Topology } from '../plan/topology.js';

/** One target: a node's gateway and registry, with their credentials (`user:password`). */
export interface FunctionNode {
  id: string;
  gatewayUrl: string;
  basicAuth: string;
  /** host:port of the node's registry. */
  registry: string;
  registryAuth: string;
}

/** What to deploy: OpenFaaS's function fields (stack.yml's, as the gateway takes them). */
export interface FunctionSpec {
  /** The function's name (a DNS label). */
  name: string;
  /**
   * The image: a reference in one of the nodes' registries (`10.0.0.11:5000/hello:1`), another
   * registry reachable from here, or a skopeo source (`oci-archive:hello.tar`, `containers-storage:localhost/hello:1`).
   */
  image: string;
  /** Repository and tag in the nodes' registries (default: the source's, else `<name>:latest`). */
  target?: string;
  envProcess?: string;
  envVars?: Record<string, string>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  secrets?: string[];
  limits?: { memory?: string; cpu?: string };
  requests?: { memory?: string; cpu?: string };
}

export interface DeployOptions {
  /** Path answered 200 when the function is ready (through the gateway); of-watchdog's own `/_/health` by default. */
  readyPath?: string;
  readyTimeoutMs?: number;
  progress?: (message: string) => void;
  /** Nodes (not deployed to) whose registries may hold the source image: their credentials are used for it. */
  sources?: readonly FunctionNode[];
}

export interface NodeOutcome {
  node: string;
  action: 'created' | 'updated' | 'removed' | 'absent';
  /** The image reference the node pulled (its own registry). */
  image?: string;
  /** From the start of the call until the function answered on this node, ms. */
  readyMs?: number;
}

/** Label the mesh's functions carry: `syncNode` copies those to a node that joins. */
export const MESH_FUNCTION_LABEL = 'com.syncmesh.mesh-function';
/** Label of the node's own functions (node.yml): never replaced or removed by a user's deploy. */
export const NODE_ROLE_LABEL = 'org.syncmesh-edge.role';
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const REPO = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const TRANSPORTS = ['docker://', 'oci-archive:', 'oci:', 'docker-archive:', 'containers-storage:', 'dir:'];
const COPY_TIMEOUT_MS = 600_000;

/** The targets named in `ids` (all when none), from a topology (.mesh/topology.json). */
export function nodesFromTopology(topology: Topology, ids?: readonly string[]): FunctionNode[] {
  const known = topology.nodes.map((n) => n.id);
  const wanted = ids && ids.length > 0 ? ids : known;
  const unknown = wanted.filter((id) => !known.includes(id));
  if (unknown.length > 0) {
    throw new MeshError('EDGE_MESH_UNKNOWN_NODE', `unknown node(s) ${unknown.join(', ')}: mesh '${topology.mesh}' has ${known.join(', ')}`);
  }
  return wanted.map((id) => {
    const n = topology.nodes.find((x) => x.id === id)!;
    const need = (what: string, v: string | null | undefined) => {
      if (!v) {
        throw new MeshError(
          'EDGE_MESH_FN_BAD_INPUT',
          `node ${id} has no ${what} in the topology: functions need a faasd mesh whose topology carries gateway_url, basic_auth_file, registry and registry_auth_file`,
        );
      }
      return v;
    };
    const file = (what: string, path: string | null | undefined) => {
      try {
        return readFileSync(need(what, path), 'utf8').trim();
      } catch (err) {
        if (err instanceof MeshError) throw err;
        throw new MeshError('EDGE_MESH_FN_BAD_INPUT', `cannot read ${what} of node ${id} (${path}): ${(err as Error).message}`, { cause: err });
      }
    };
    return {
      id,
      gatewayUrl: need('gateway_url', n.gateway_url),
      basicAuth: file('basic_auth_file', n.basic_auth_file),
      registry: need('registry', n.registry),
      registryAuth: file('registry_auth_file', n.registry_auth_file),
    };
  });
}

/** The skopeo source of an image reference, and the registry host it names (if any). */
export function imageSource(image: string): { source: string; host?: string; repo?: string } {
  for (const t of TRANSPORTS) {
    if (image.startsWith(t) && t !== 'docker://') return { source: image };
  }
  const ref = image.startsWith('docker://') ? image.slice('docker://'.length) : image;
  const slash = ref.indexOf('/');
  const first = slash < 0 ? '' : ref.slice(0, slash);
  const host = first.includes('.') || first.includes(':') || first === 'localhost' ? first : undefined;
  let repo = host ? ref.slice(slash + 1) : ref;
  repo = repo.replace(/@sha256:[0-9a-f]{64}$/, '');
  if (!/:[^/]+$/.test(repo)) repo = `${repo}:latest`;
  return { source: `docker://${ref}`, ...(host ? { host } : {}), repo };
}

/** Checks a spec before anything changes; returns the repository:tag in the nodes' registries. */
export function checkSpec(spec: FunctionSpec): string {
  if (!NAME.test(spec.name)) {
    throw new MeshError(
      'EDGE_MESH_FN_BAD_INPUT',
      `function name '${spec.name}' is invalid: lower-case letters, digits and -, 1-63, starting and ending with a letter or digit`,
    );
  }
  if (!spec.image) throw new MeshError('EDGE_MESH_FN_BAD_INPUT', `function ${spec.name} needs an image`);
  const target = spec.target ?? imageSource(spec.image).repo ?? `${spec.name}:latest`;
  if (!REPO.test(target)) {
    throw new MeshError(
      'EDGE_MESH_FN_BAD_INPUT',
      `'${target}' is not a repository:tag for the nodes' registries (lower-case path, then :tag); give one with target`,
    );
  }
  for (const s of spec.secrets ?? []) {
    if (!NAME.test(s)) throw new MeshError('EDGE_MESH_FN_BAD_INPUT', `secret name '${s}' is invalid: a lower-case DNS label`);
  }
  return target;
}

/** A temporary containers auth file holding these registries' credentials (mode 0600). */
function authFile(entries: readonly { registry: string; auth: string }[]): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'syncmesh-fn-'));
  const path = join(dir, 'auth.json');
  const auths = Object.fromEntries(entries.map((e) => [e.registry, { auth: Buffer.from(e.auth).toString('base64') }]));
  writeFileSync(path, JSON.stringify({ auths }), { mode: 0o600 });
  chmodSync(path, 0o600);
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** skopeo's message without its noise, for an error. */
function skopeoWhy(err: unknown): string {
  const m = (err as Error).message;
  const line = m
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /level=fatal|error|denied|unauthorized|no space|manifest unknown|not found/i.test(l))
    .pop();
  return (line ?? m).replace(/^time="[^"]*" level=fatal msg=/, '').slice(0, 400);
}

/** Proves a node's registry takes its credentials (GET /v2/ with basic auth). */
export async function checkRegistry(node: FunctionNode, timeoutMs = 10_000): Promise<void> {
  let status: number;
  try {
    const res = await fetch(`http://${node.registry}/v2/`, {
      headers: { authorization: `Basic ${Buffer.from(node.registryAuth).toString('base64')}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = res.status;
    await res.arrayBuffer();
  } catch (err) {
    throw new MeshError('EDGE_MESH_FN_REGISTRY', `the registry of ${node.id} (${node.registry}) does not answer: ${(err as Error).message}`, { cause: err });
  }
  if (status === 401) {
    throw new MeshError(
      'EDGE_MESH_FN_REGISTRY',
      `the registry of ${node.id} (${node.registry}) refused the credentials (HTTP 401): check the node's registry_auth_file`,
    );
  }
  if (status !== 200) throw new MeshError('EDGE_MESH_FN_REGISTRY', `the registry of ${node.id} (${node.registry}) answered HTTP ${status} to /v2/`);
}

/** What each target has now (its function list), proving its gateway and credentials. */
async function gatewayFunctions(node: FunctionNode): Promise<GatewayFunction[]> {
  const gw = new GatewayClient(node.gatewayUrl, node.basicAuth);
  const r = await gw.request('GET', '/system/functions');
  if (r.status === 401) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `the gateway of ${node.id} (${node.gatewayUrl}) refused the basic auth (HTTP 401)`);
  if (r.status !== 200) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `GET ${node.gatewayUrl}/system/functions: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
  return JSON.parse(r.text) as GatewayFunction[];
}

function refuseNodeFunction(node: FunctionNode, existing: GatewayFunction | undefined, name: string): void {
  const role = existing?.labels?.[NODE_ROLE_LABEL];
  if (role) {
    throw new MeshError(
      'EDGE_MESH_FN_BAD_INPUT',
      `${name} is one of ${node.id}'s own functions (${NODE_ROLE_LABEL}=${role}): a user's function cannot replace or remove it; choose another name`,
    );
  }
}

/** Copies `source` into every target's registry as `target` (all architectures of an index). */
async function copyImage(
  nodes: readonly FunctionNode[],
  source: { source: string; host?: string },
  target: string,
  sourceAuth: string | undefined,
  progress: (m: string) => void,
): Promise<void> {
  const auth = authFile([
    ...nodes.map((n) => ({ registry: n.registry, auth: n.registryAuth })),
    ...(source.host && sourceAuth ? [{ registry: source.host, auth: sourceAuth }] : []),
  ]);
  try {
    for (const n of nodes) {
      const dest = `docker://${n.registry}/${target}`;
      if (source.source === dest) continue; // already there
      const t0 = performance.now();
      try {
        await run(
          'skopeo',
          ['copy', '--quiet', '--all', '--authfile', auth.path, '--src-tls-verify=false', '--dest-tls-verify=false', '--retry-times', '2', source.source, dest],
          { timeoutMs: COPY_TIMEOUT_MS },
        );
      } catch (err) {
        const why = skopeoWhy(err);
        const full =
          /no space|disk quota|storage full/i.test(why) || /\b(500|507)\b/.test(why)
            ? " (is its storage full? it keeps images on the node's data partition)"
            : '';
        throw new MeshError('EDGE_MESH_FN_REGISTRY', `copying ${source.source} to ${n.id}'s registry (${n.registry}/${target}) failed${full}: ${why}`, {
          cause: err,
        });
      }
      progress(`${n.id}: image in its registry as ${n.registry}/${target} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    }
  } finally {
    auth.remove();
  }
}

/**
 * Puts `image` (see FunctionSpec.image) into the registry of every node of `nodes` as `target`
 * (repository:tag), each with that node's credentials; `sources` lend theirs to the source
 * registry. What deployFunction does before it deploys; also for an operator's own tooling.
 */
export async function pushImage(
  nodes: readonly FunctionNode[],
  image: string,
  target: string,
  opts: { sources?: readonly FunctionNode[]; progress?: (m: string) => void } = {},
): Promise<void> {
  const source = imageSource(image);
  const sourceNode = source.host ? [...nodes, ...(opts.sources ?? [])].find((n) => n.registry === source.host) : undefined;
  await copyImage(nodes, source, target, sourceNode?.registryAuth, opts.progress ?? (() => undefined));
}

/** The gateway's body for `spec` on `node`, pulling from the node's own registry. */
function deploymentFor(spec: FunctionSpec, node: FunctionNode, target: string): FunctionDeployment {
  return {
    service: spec.name,
    image: `${node.registry}/${target}`,
    ...(spec.envProcess ? { envProcess: spec.envProcess } : {}),
    envVars: spec.envVars ?? {},
    secrets: spec.secrets ?? [],
    labels: { ...spec.labels, [MESH_FUNCTION_LABEL]: 'true' },
    annotations: spec.annotations ?? {},
    ...(spec.limits ? { limits: spec.limits } : {}),
    ...(spec.requests ? { requests: spec.requests } : {}),
  };
}

/** The deployment a listed function was made from (to put it back). */
function deploymentOf(f: GatewayFunction & { annotations?: Record<string, string>; envProcess?: string; limits?: { memory?: string } }): FunctionDeployment {
  return {
    service: f.name,
    image: f.image,
    ...(f.envProcess ? { envProcess: f.envProcess } : {}),
    envVars: f.envVars ?? {},
    secrets: f.secrets ?? [],
    labels: f.labels ?? {},
    annotations: f.annotations ?? {},
    ...(f.limits?.memory ? { limits: { memory: f.limits.memory } } : {}),
  };
}

async function gatewayWrite(node: FunctionNode, method: 'POST' | 'PUT' | 'DELETE', body: unknown): Promise<{ status: number; text: string }> {
  return new GatewayClient(node.gatewayUrl, node.basicAuth).request(method, '/system/functions', body, 180_000);
}

/**
 * Deploys `spec` to every node of `nodes` (see the module's comment for the order and the
 * rollback). Resolves with what happened on each node once the function answers on all of them.
 */
export async function deployFunction(nodes: readonly FunctionNode[], spec: FunctionSpec, opts: DeployOptions = {}): Promise<NodeOutcome[]> {
  const progress = opts.progress ?? (() => undefined);
  const t0 = performance.now();
  if (nodes.length === 0) throw new MeshError('EDGE_MESH_FN_BAD_INPUT', 'no target node');
  const target = checkSpec(spec);

  // 1. every target proven before anything changes
  const existing = new Map<string, GatewayFunction | undefined>();
  await Promise.all(
    nodes.map(async (n) => {
      const fns = await gatewayFunctions(n);
      const have = fns.find((f) => f.name === spec.name);
      refuseNodeFunction(n, have, spec.name);
      existing.set(n.id, have);
      await checkRegistry(n);
    }),
  );
  // 2. the image into every target's registry
  await pushImage(nodes, spec.image, target, { ...(opts.sources ? { sources: opts.sources } : {}), progress });
  // 3. deploy node after node; roll back the ones done when one refuses
  const done: NodeOutcome[] = [];
  try {
    for (const n of nodes) {
      const body = deploymentFor(spec, n, target);
      const had = existing.get(n.id);
      let r = await gatewayWrite(n, had ? 'PUT' : 'POST', body);
      if (had && r.status === 404) r = await gatewayWrite(n, 'POST', body); // removed meanwhile
      if (r.status < 200 || r.status >= 300) {
        throw new MeshError('EDGE_MESH_FAASD_DEPLOY', `${n.id} refused ${spec.name} (image ${body.image}): HTTP ${r.status}: ${r.text.trim().slice(0, 400)}`);
      }
      done.push({ node: n.id, action: had ? 'updated' : 'created', image: body.image });
      progress(`${n.id}: ${spec.name} ${had ? 'updated' : 'deployed'} from ${body.image}`);
    }
  } catch (err) {
    await rollBack(nodes, done, existing, spec.name, progress);
    const why = (err as Error).message;
    throw new MeshError(
      err instanceof MeshError ? err.code : 'EDGE_MESH_FAASD_DEPLOY',
      `${why}${done.length > 0 ? `; rolled back on ${done.map((d) => d.node).join(', ')}` : ''} (nothing else changed)`,
      { cause: err },
    );
  }
  // 4. ready everywhere
  const readyPath = opts.readyPath ?? '/_/health';
  await Promise.all(
    done.map(async (d) => {
      const n = nodes.find((x) => x.id === d.node)!;
      await waitFor(`${spec.name} on ${n.id}`, () => answers(n, spec.name, readyPath), opts.readyTimeoutMs ?? 180_000);
      d.readyMs = performance.now() - t0;
      progress(`${n.id}: ${spec.name} answers (${(d.readyMs / 1000).toFixed(1)} s after the start)`);
    }),
  );
  return done;
}

async function answers(n: FunctionNode, name: string, path: string): Promise<boolean> {
  try {
    const res = await fetch(`${n.gatewayUrl}/function/${name}${path}`, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

async function rollBack(
  nodes: readonly FunctionNode[],
  done: readonly NodeOutcome[],
  existing: Map<string, GatewayFunction | undefined>,
  name: string,
  progress: (m: string) => void,
): Promise<void> {
  for (const d of done) {
    const n = nodes.find((x) => x.id === d.node)!;
    const had = existing.get(n.id);
    const r = had ? await gatewayWrite(n, 'PUT', deploymentOf(had)) : await gatewayWrite(n, 'DELETE', { functionName: name });
    progress(`${n.id}: rolled back ${name} (${had ? 'previous version put back' : 'removed'}: HTTP ${r.status})`);
  }
}

/** Removes function `name` from every node of `nodes` (a node without it is left as it is). */
export async function removeFunction(nodes: readonly FunctionNode[], name: string, opts: { progress?: (m: string) => void } = {}): Promise<NodeOutcome[]> {
  if (!NAME.test(name)) throw new MeshError('EDGE_MESH_FN_BAD_INPUT', `function name '${name}' is invalid: a lower-case DNS label`);
  const lists = await Promise.all(nodes.map(async (n) => ({ n, have: (await gatewayFunctions(n)).find((f) => f.name === name) })));
  for (const { n, have } of lists) refuseNodeFunction(n, have, name);
  const out: NodeOutcome[] = [];
  for (const { n, have } of lists) {
    if (!have) {
      out.push({ node: n.id, action: 'absent' });
      continue;
    }
    const r = await gatewayWrite(n, 'DELETE', { functionName: name });
    if (r.status !== 200 && r.status !== 202 && r.status !== 404) {
      throw new MeshError('EDGE_MESH_FAASD_DEPLOY', `${n.id} refused to remove ${name}: HTTP ${r.status}: ${r.text.trim().slice(0, 300)}`);
    }
    out.push({ node: n.id, action: 'removed' });
    opts.progress?.(`${n.id}: ${name} removed`);
  }
  return out;
}

/**
 * A node that joined later gets the mesh's functions (label com.syncmesh.mesh-function=true on
 * the first node of `from` that answers), each copied from that node's registry and deployed
 * as it runs there.
 */
export async function syncNode(target: FunctionNode, from: readonly FunctionNode[], opts: DeployOptions = {}): Promise<NodeOutcome[]> {
  const sources = from.filter((n) => n.id !== target.id);
  let source: FunctionNode | undefined;
  let fns: GatewayFunction[] = [];
  for (const n of sources) {
    try {
      fns = await gatewayFunctions(n);
      source = n;
      break;
    } catch (err) {
      opts.progress?.(`${n.id} cannot be read (${(err as Error).message}); trying the next node`);
    }
  }
  if (!source) throw new MeshError('EDGE_MESH_FAASD_GATEWAY', `no node of ${sources.map((n) => n.id).join(', ')} answered: nothing to copy functions from`);
  const out: NodeOutcome[] = [];
  for (const f of fns.filter((x) => x.labels?.[MESH_FUNCTION_LABEL] === 'true')) {
    const d = deploymentOf(f);
    const src = imageSource(d.image);
    const labels = Object.fromEntries(Object.entries(d.labels).filter(([k]) => k !== MESH_FUNCTION_LABEL));
    const spec: FunctionSpec = {
      name: d.service,
      image: d.image,
      ...(src.repo ? { target: src.repo } : {}),
      ...(d.envProcess ? { envProcess: d.envProcess } : {}),
      envVars: d.envVars,
      labels,
      annotations: d.annotations,
      secrets: d.secrets,
      ...(d.limits ? { limits: d.limits } : {}),
    };
    out.push(...(await deployFunction([target], spec, { ...opts, sources: [source] })));
  }
  return out;
}
