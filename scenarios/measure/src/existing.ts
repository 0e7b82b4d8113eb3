/**
 * An existing mesh, measured as it is (`make scenario TOPOLOGY=…`, `make scenario
 * TARGET=terraform`): another emulated mesh (scenarios/mesh) or the Terraform VMs. Everything
 * comes from its `topology.json`: the nodes' addresses and ports (the classifier's layout,
 * `layoutFromTopology`), the URLs node-1 reaches its peers at, and each node's link
 * (`host_interface`: the host side of a node's veth, or a VM's tap).
 *
 * The links and the bridge they are plugged into live in one network namespace: the host's for
 * the emulated mesh, libvirt's for the Terraform VMs (`libvirt_netns`, or the nodes'
 * `namespace` when `isolation` is `vm`), or SCENARIO_CAPTURE_NETNS. tcpdump runs there, and the
 * client namespace where k6 runs is plugged into that bridge (`<mesh>-cl` at .240 of the
 * subnet), so the client has its own address and interface on both kinds of mesh: on the
 * emulated mesh the host's address is the link proxies', not a client's.
 *
 * inspectExistingMesh() only reads and checks (nothing changes); attachClient() adds the client
 * namespace and checks from it that every node answers, before anything is measured.
 */
import { existsSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { basename, dirname } from 'node:path';
import { z } from 'zod';
import {
  bridgeOf,
  createExtraNamespace,
  extraNamespace,
  inNetns,
  layoutFromTopology,
  listNamespaces,
  namespacePids,
  removeNamespace,
  type CaptureTarget,
  type Layout,
} from '@syncmesh-edge/lab';
import { status as meshStatus } from '@syncmesh-edge/mesh';
import type { ScenarioConfig } from './config.js';
import { ScenarioError, squashError } from './errors.js';
import type { CellMesh } from './cell-mesh.js';
import type { WatchedProcess } from './sampler.js';

/** One node must answer its health URL from the client namespace within this time. */
export const NODE_PROBE_TIMEOUT_MS = 10_000;

const url = z.string().refine((u) => URL.canParse(u), 'an absolute URL');

/** The part of topology.json (scenarios/mesh/src/plan/topology.ts, terraform/modules/mesh-files) this reads. */
const topologySchema = z.object({
  mesh: z.string().regex(/^[a-z][a-z0-9]{1,7}$/, 'a mesh name: a lowercase letter, then 1-7 lowercase letters or digits'),
  isolation: z.enum(['netns', 'vm'], {
    message: "'netns' (scenarios/mesh) or 'vm' (Terraform); a loopback mesh shares one address between all its nodes, so its traffic cannot be told apart",
  }),
  subnet: z.string().regex(/^(\d{1,3}\.){3}0\/24$/, 'the mesh network, an IPv4 /24 such as 10.61.0.0/24'),
  host_address: z.string().min(1),
  latency: z.string().min(1),
  libvirt_netns: z.string().min(1).optional(),
  nodes: z
    .array(
      z.object({
        id: z.string().min(1),
        address: z.string().min(1),
        function_url: url,
        agent_address: z.string().nullable(),
        mongodb_uri: z.string().nullable(),
        namespace: z.string().nullable(),
        host_interface: z.string().nullable(),
        peers: z.record(z.string(), url),
        // the emulated mesh's link proxies (scenarios/mesh); Terraform meshes have none
        links: z.record(z.string(), z.string()).nullable().optional(),
        agent_links: z.record(z.string(), z.string()).nullable().optional(),
      }),
    )
    .min(1)
    .max(30),
});

export type ExistingTopology = z.infer<typeof topologySchema>;

/** An existing mesh, checked: what a cell needs (CellMesh) and where it lives. */
export interface ExistingMesh extends CellMesh {
  readonly name: string;
  readonly topologyPath: string;
  readonly topology: ExistingTopology;
  /** Namespace holding the bridge and the nodes' links; null: the host's. */
  readonly netns: string | null;
  readonly bridge: string;
  /** One line for the progress and the report: what was measured where. */
  readonly description: string;
}

function topologyError(path: string, what: string): ScenarioError {
  return new ScenarioError('EDGE_SCENARIO_TOPOLOGY', `topology ${path}: ${what}`);
}

/** Reads and validates a topology.json; throws EDGE_SCENARIO_TOPOLOGY saying what is missing. */
export function readTopology(path: string): ExistingTopology {
  if (!existsSync(path)) {
    throw topologyError(
      path,
      'no such file: bring the mesh up first (make mesh-up MESH_NAME=<name> writes .mesh/<name>/topology.json; make tf-up SCENARIO=local-3 writes .mesh/smt3/topology.json)',
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ScenarioError('EDGE_SCENARIO_TOPOLOGY', `topology ${path}: not JSON: ${(err as Error).message}`, { cause: err });
  }
  const parsed = topologySchema.safeParse(raw);
  if (!parsed.success) throw topologyError(path, parsed.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`).join('; '));
  const t = parsed.data;
  const [first, ...others] = t.nodes;
  const unknownPeers = others.filter((n) => !first!.peers[n.id]).map((n) => n.id);
  if (unknownPeers.length > 0) {
    throw topologyError(path, `${first!.id} (the entry node) has no peer URL for ${unknownPeers.join(', ')}: every node must be in nodes[0].peers`);
  }
  return t;
}

/** The namespace that holds the bridge and the nodes' links (null: the host's). */
export function captureNetnsOf(t: ExistingTopology, configured: string | null | undefined, path: string): string | null {
  if (configured !== undefined) return configured;
  if (t.libvirt_netns) return t.libvirt_netns;
  if (t.isolation === 'netns') return null; // scenarios/mesh: the host side of every node's veth is on the host
  const namespaces = [...new Set(t.nodes.map((n) => n.namespace))];
  if (namespaces.length === 1 && namespaces[0]) return namespaces[0];
  throw topologyError(
    path,
    `isolation 'vm' but no single namespace holds the VMs' links (libvirt_netns unset; nodes' namespace: ${namespaces.map(String).join(', ')}): set SCENARIO_CAPTURE_NETNS (${'`host`'} for the host's)`,
  );
}

/**
 * Reads and checks the existing mesh of cfg.existing: topology, node count and link profile
 * against what was asked, the namespace, every node's link and the one bridge they share.
 * Changes nothing; throws EDGE_SCENARIO_TOPOLOGY / EDGE_SCENARIO_CONFIG naming what is wrong.
 */
export async function inspectExistingMesh(cfg: ScenarioConfig): Promise<ExistingMesh> {
  const ex = cfg.existing;
  if (!ex) throw new ScenarioError('EDGE_SCENARIO_CONFIG', 'no existing mesh configured (SCENARIO_TOPOLOGY)');
  const path = ex.topologyPath;
  const t = readTopology(path);
  if (ex.requestedNodes !== undefined && ex.requestedNodes !== t.nodes.length) {
    throw new ScenarioError(
      'EDGE_SCENARIO_CONFIG',
      `NODES=${ex.requestedNodes} (SCENARIO_NODES) disagrees with the existing mesh '${t.mesh}', which has ${t.nodes.length} nodes (${path}): leave NODES unset, or set it to ${t.nodes.length}`,
    );
  }
  if (ex.requestedLatency !== undefined && ex.requestedLatency !== t.latency) {
    throw new ScenarioError(
      'EDGE_SCENARIO_CONFIG',
      `LATENCY=${ex.requestedLatency} (SCENARIO_LATENCY) disagrees with the existing mesh '${t.mesh}', whose links are '${t.latency}' (${path}): the scenario cannot reshape them; leave LATENCY unset`,
    );
  }
  const netns = captureNetnsOf(t, ex.captureNetns, path);
  const where = netns ? `namespace ${netns}` : "the host's namespace";
  if (netns && !(await listNamespaces()).includes(netns)) {
    throw topologyError(
      path,
      `the namespace ${netns} that holds the mesh's bridge does not exist: is the mesh up? (Terraform: make tf-up SCENARIO=…; libvirtd runs in it)`,
    );
  }
  const bridges = new Set<string>();
  for (const n of t.nodes) {
    if (!n.host_interface) throw topologyError(path, `${n.id} has no host_interface (its link), which the capture needs`);
    let master: string | null;
    try {
      master = await bridgeOf(n.host_interface, netns);
    } catch (err) {
      throw new ScenarioError('EDGE_SCENARIO_TOPOLOGY', `topology ${path}: ${n.id}'s link ${n.host_interface} is not in ${where}: is the mesh up?`, {
        cause: err,
      });
    }
    if (!master) throw topologyError(path, `${n.id}'s link ${n.host_interface} (in ${where}) is not plugged into a bridge`);
    bridges.add(master);
  }
  if (bridges.size !== 1) throw topologyError(path, `the nodes' links are on ${bridges.size} bridges (${[...bridges].join(', ')}); the scenario needs one`);
  const bridge = [...bridges][0]!;
  const client = extraNamespace(t.mesh, t.subnet, 'cl', netns);
  const taken = t.nodes.find((n) => n.address === client.addr);
  if (taken || t.host_address === client.addr) {
    throw topologyError(path, `the client's address ${client.addr} (.240 of the subnet) is taken by ${taken ? taken.id : 'the host'}`);
  }
  const layout: Layout = layoutFromTopology(t, { clientAddrs: [client.addr] });
  const bridgeCapture = ex.capture === 'bridge';
  const inNs = netns ? { netns } : {};
  const targets: CaptureTarget[] = bridgeCapture
    ? [{ iface: bridge, kind: 'bridge', ...inNs }]
    : [{ iface: client.hostIf, kind: 'client', ...inNs }, ...t.nodes.map((n) => ({ iface: n.host_interface!, kind: 'node' as const, node: n.id, ...inNs }))];
  // an emulated mesh's state sits beside its topology (.mesh/<name>/), or one level down (.mesh/topology.json)
  const stateRoot = basename(dirname(path)) === t.mesh ? dirname(dirname(path)) : dirname(path);
  return {
    name: t.mesh,
    topologyPath: path,
    topology: t,
    netns,
    bridge,
    nodes: t.nodes,
    client,
    latency: t.latency,
    description: `isolation ${t.isolation}, links ${t.latency}, topology ${path}; tcpdump in ${where} on ${bridgeCapture ? `the bridge ${bridge}` : `every node's link on ${bridge} and the client's`}`,
    captureTargets: () => targets,
    layout: () => layout,
    processes: async (_central, nodes) => (t.isolation === 'netns' ? meshProcesses(stateRoot, t.mesh, nodes) : netns ? qemuProcesses(netns) : []),
  };
}

/** Node script: GET every URL given (JSON array) with a deadline; prints the failures, exit 1 if any. */
const PROBE_SCRIPT = `
const urls = JSON.parse(process.argv[1]);
const bad = [];
await Promise.all(urls.map(async (u) => {
  try {
    const r = await fetch(u, { signal: AbortSignal.timeout(${NODE_PROBE_TIMEOUT_MS}) });
    if (r.status !== 200) bad.push(u + ': HTTP ' + r.status);
  } catch (e) {
    bad.push(u + ': ' + (e.cause?.code ?? e.name));
  }
}));
if (bad.length) { process.stderr.write(bad.join('\\n')); process.exit(1); }
`;

/** The health URL k6's setup() asks (scenarios/k6/lib/syncmesh.js healthUrl): the function's origin + /healthz. */
export function healthUrl(functionUrl: string): string {
  return `${new URL(functionUrl).origin}/healthz`;
}

/**
 * Plugs the client namespace into the mesh's bridge (removing a leftover of an interrupted run
 * first) and checks from it that every node answers; throws EDGE_SCENARIO_UNREACHABLE naming
 * the nodes that do not (the namespace is removed again then).
 */
export async function attachClient(mesh: ExistingMesh): Promise<void> {
  await removeNamespace(mesh.client);
  await createExtraNamespace(mesh.client, mesh.bridge);
  const urls = mesh.nodes.map((n) => healthUrl(n.function_url));
  const argv = inNetns(mesh.client.netns, [process.execPath, '--input-type=module', '-e', PROBE_SCRIPT, JSON.stringify(urls)]);
  const failed = await new Promise<string | null>((resolveProbe) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.once('error', (e) => resolveProbe(e.message));
    child.once('close', (code) => resolveProbe(code === 0 ? null : err.trim() || `probe exited with ${code}`));
  });
  if (failed !== null) {
    await removeNamespace(mesh.client);
    throw new ScenarioError(
      'EDGE_SCENARIO_UNREACHABLE',
      `from the client namespace ${mesh.client.netns} (${mesh.client.addr}, on ${mesh.bridge}) not every node of '${mesh.name}' answers: ${failed.split('\n').join('; ')}. Is every node up and ready? (make mesh-status; Terraform: make tf-up waits until each node is ready)`,
    );
  }
}

/** Removes the client namespace (idempotent). */
export async function detachClient(mesh: ExistingMesh): Promise<void> {
  await removeNamespace(mesh.client);
}

/** The processes of an emulated mesh's nodes 1..`nodes` and its toxiproxy, from its state; none when it has no state here. */
export async function meshProcesses(stateRoot: string, name: string, nodes: number): Promise<WatchedProcess[]> {
  const out: WatchedProcess[] = [];
  let s: Awaited<ReturnType<typeof meshStatus>>;
  try {
    s = await meshStatus(stateRoot, name);
  } catch (err) {
    squashError(err); // a mesh started elsewhere (its state is not on this machine): nothing local to sample
    return out;
  }
  if (s.toxiproxy?.alive) out.push({ role: 'toxiproxy', node: null, pid: s.toxiproxy.pid });
  for (const n of s.nodes.slice(0, nodes)) for (const p of n.processes) if (p.alive) out.push({ role: `node-${p.role}`, node: n.id, pid: p.pid });
  return out;
}

/** The QEMU processes in the VMs' namespace (one per VM, named by its libvirt domain). */
async function qemuProcesses(netns: string): Promise<WatchedProcess[]> {
  const out: WatchedProcess[] = [];
  for (const pid of await namespacePids(netns)) {
    let cmdline: string[];
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch (err) {
      squashError(err); // exited meanwhile
      continue;
    }
    if (!basename(cmdline[0] ?? '').startsWith('qemu-system')) continue;
    const guest = /guest=([^,]+)/.exec(cmdline[cmdline.indexOf('-name') + 1] ?? '')?.[1] ?? null;
    out.push({ role: 'node-vm', node: guest, pid });
  }
  return out;
}
