/**
 * The lab's one implementation of network namespace commands (iproute2): list namespaces,
 * interfaces and routes, create a bridge, plug a namespace into a bridge with a veth, run a
 * command inside a namespace, and remove namespaces and interfaces (killing what runs inside).
 * scenarios/mesh builds its nodes' network from these (`scenarios/mesh/src/network/network.ts` keeps
 * only the mesh's names and checks).
 *
 * On top of them, the two namespaces the lab adds to a running mesh, on the mesh's bridge: the
 * client (k6, the demo's queries and `make mesh-capture`'s command run there, so client traffic
 * has its own address and interface) and the baseline's central server. Names start with the mesh
 * name (`<mesh>-cl`, `<mesh>-db`; host ends `<mesh>-clh`, `<mesh>-dbh`), so two meshes never
 * collide, and removeExtraNamespaces() finds them by name also after a crash. The bridge may live
 * in another namespace than the host's (libvirt's, for the Terraform VMs): the host end of the
 * veth then lives there too (`hostNetns`).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { squashError } from '@syncmesh-edge/log';
import { run, tryRun, waitFor, type RunOptions, type RunResult } from './sys.js';

/** The interface name inside every namespace the lab plugs into a bridge, as on a real single-NIC appliance. */
export const NETNS_IF = 'eth0';

/** `ip` arguments for the namespace `netns` (null: the host's). */
function ipIn(netns: string | null, args: readonly string[]): string[] {
  return netns ? ['-n', netns, ...args] : [...args];
}

/** The command line that runs `argv` inside `netns` (`ip netns exec` execs in place: the pid is the command's). */
export function inNetns(netns: string, argv: readonly string[]): [string, ...string[]] {
  return ['ip', 'netns', 'exec', netns, ...argv];
}

/** Runs `argv` inside `netns` (see run(): EDGE_LAB_COMMAND_FAILED with stderr on failure). */
export function runInNetns(netns: string, argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const [cmd, ...args] = inNetns(netns, argv);
  return run(cmd, args, opts);
}

/** Starts `argv` inside `netns` as a child of ours (its pid is the command's). */
export function spawnInNetns(netns: string, argv: readonly string[], opts: SpawnOptions = {}): ChildProcess {
  const [cmd, ...args] = inNetns(netns, argv);
  return spawn(cmd, args, opts);
}

/** Does `argv` succeed inside `netns`? (false also when the namespace is gone) */
export function tryRunInNetns(netns: string, argv: readonly string[]): Promise<boolean> {
  const [cmd, ...args] = inNetns(netns, argv);
  return tryRun(cmd, args);
}

/** The names of every network namespace (`ip netns list`). */
export async function listNamespaces(): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list']);
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter((n) => n.length > 0);
}

/** The names of every interface in `netns` (null: the host's). */
export async function listLinks(netns: string | null = null): Promise<string[]> {
  const { stdout } = await run('ip', ipIn(netns, ['-j', 'link', 'show']));
  return (JSON.parse(stdout) as { ifname: string }[]).map((l) => l.ifname);
}

/** An IPv4 route of the host (`ip -4 -j route show table all`). */
export interface Route {
  readonly dst: string;
  readonly dev?: string;
  readonly table?: string;
  readonly type?: string;
}

/** Every IPv4 route of the host, in all tables. */
export async function listRoutes(): Promise<Route[]> {
  const { stdout } = await run('ip', ['-4', '-j', 'route', 'show', 'table', 'all']);
  return JSON.parse(stdout) as Route[];
}

/**
 * A free test subnet 10.<second>.y.0/24, as its first three octets (`10.<second>.<y>`): the first
 * y from the pid on with no host route inside it (a killed earlier run can leave its bridge and
 * route behind). Without the ip command (the test skips then anyway): the pid's y.
 */
export async function freeSubnet(second: number): Promise<string> {
  const routes = await listRoutes().catch(() => []);
  for (let i = 0; i < 256; i++) {
    const y = (process.pid + i) % 256;
    if (!routes.some((r) => r.dst.startsWith(`10.${second}.${y}.`))) return `10.${second}.${y}`;
  }
  throw new Error(`no free 10.${second}.y.0/24 on this host: remove leftover test bridges (ip route | grep '^10.${second}.')`);
}

/** A bridge with namespaces on it, for a test (createTestNetwork). */
export interface TestNetwork {
  /** The first three octets of its /24 (`10.<second>.<y>`); the host, on the bridge, is `.1`. */
  readonly net: string;
  readonly bridge: string;
  /** The namespaces, `<prefix>-n<i>`, and their addresses (`.11`, `.12`, …). */
  readonly namespaces: readonly string[];
  readonly hosts: readonly string[];
  /** Deletes the namespaces (killing what runs inside) and the bridge. Safe to call twice. */
  remove(): Promise<void>;
}

/**
 * A bridge `<prefix>-br` on a free 10.<second>.y.0/24 (freeSubnet; the host is `.1`) and `count`
 * namespaces `<prefix>-n<i>` on it (veth `<prefix>-h<i>` / `<prefix>-p<i>`) at `.11`, `.12`, …
 * When a step fails, what was made is removed before the error is thrown.
 */
export async function createTestNetwork(prefix: string, second: number, count: number): Promise<TestNetwork> {
  const net = await freeSubnet(second);
  const bridge = `${prefix}-br`;
  const namespaces = Array.from({ length: count }, (_, i) => `${prefix}-n${i}`);
  const hosts = namespaces.map((_, i) => `${net}.${11 + i}`);
  const remove = async () => {
    for (const ns of namespaces) await deleteNamespace(ns);
    await deleteLink(bridge);
  };
  try {
    await createBridge(bridge, { address: `${net}.1/24` });
    for (const [i, netns] of namespaces.entries()) {
      await attachNamespace({ netns, hostIf: `${prefix}-h${i}`, peerIf: `${prefix}-p${i}`, hostNetns: null, address: `${hosts[i]}/24`, bridge });
    }
  } catch (err) {
    await remove();
    throw err;
  }
  return { net, bridge, namespaces, hosts, remove };
}

/** The namespaces and host interfaces whose names start with `<prefix>-`: what a lab run must not leave behind. */
export async function leftovers(prefix: string): Promise<{ netns: string[]; links: string[] }> {
  const mine = (n: string) => n.startsWith(`${prefix}-`);
  return { netns: (await listNamespaces()).filter(mine), links: (await listLinks()).filter(mine) };
}

/** Creates an empty namespace (EDGE_LAB_COMMAND_FAILED when the name is taken). */
export async function createNamespace(netns: string): Promise<void> {
  await run('ip', ['netns', 'add', netns]);
}

/**
 * A fixed, locally administered unicast MAC for a bridge, derived from its name. A bridge whose
 * MAC was never set takes the lowest MAC of its ports and changes it when a port with a lower one
 * joins; the namespaces' ARP entries for the bridge's address then point at the old MAC, whose
 * frames the bridge passes up as "other host" and IP drops. A connection to the host (toxiproxy
 * listens there) then hangs until ARP re-probes, seconds later: the capture test's forward timed
 * out 1 run in 6 after the client namespace joined.
 */
export function bridgeMac(bridge: string): string {
  const h = createHash('sha256').update(bridge).digest();
  h[0] = (h[0]! & 0xfc) | 0x02; // locally administered, unicast
  return [...h.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** Creates a bridge (in `netns`, null: the host's) with a fixed MAC (bridgeMac), gives it `address` (CIDR) when one is given, and brings it up. */
export async function createBridge(bridge: string, opts: { address?: string; netns?: string | null } = {}): Promise<void> {
  const netns = opts.netns ?? null;
  await run('ip', ipIn(netns, ['link', 'add', bridge, 'address', bridgeMac(bridge), 'type', 'bridge']));
  if (opts.address) await run('ip', ipIn(netns, ['addr', 'add', opts.address, 'dev', bridge]));
  await run('ip', ipIn(netns, ['link', 'set', bridge, 'up']));
}

/** A namespace plugged into a bridge through a veth pair. */
export interface VethAttachment {
  readonly netns: string;
  /** Host side of the veth (capture here); it joins the bridge. */
  readonly hostIf: string;
  /** The namespace side's name until it is inside the namespace and renamed NETNS_IF (a name free on the host). */
  readonly peerIf: string;
  /** Namespace holding `hostIf` and the bridge; null: the host's. */
  readonly hostNetns: string | null;
  /** The namespace's address on NETNS_IF, as CIDR (`10.77.3.11/24`). */
  readonly address: string;
  readonly bridge: string;
  /** Extra routes out of NETNS_IF (for example multicast, `224.0.0.0/4`). */
  readonly routes?: readonly string[];
}

/** Creates the namespace, its veth into the bridge, its loopback, address and routes. */
export async function attachNamespace(a: VethAttachment): Promise<void> {
  await createNamespace(a.netns);
  await run('ip', ['link', 'add', a.hostIf, 'type', 'veth', 'peer', 'name', a.peerIf]);
  await run('ip', ['link', 'set', a.peerIf, 'netns', a.netns]);
  if (a.hostNetns) await run('ip', ['link', 'set', a.hostIf, 'netns', a.hostNetns]);
  await run('ip', ['-n', a.netns, 'link', 'set', a.peerIf, 'name', NETNS_IF]);
  await run('ip', ['-n', a.netns, 'addr', 'add', a.address, 'dev', NETNS_IF]);
  await run('ip', ['-n', a.netns, 'link', 'set', 'lo', 'up']);
  await run('ip', ['-n', a.netns, 'link', 'set', NETNS_IF, 'up']);
  for (const route of a.routes ?? []) await run('ip', ['-n', a.netns, 'route', 'add', route, 'dev', NETNS_IF]);
  await run('ip', ipIn(a.hostNetns, ['link', 'set', a.hostIf, 'master', a.bridge]));
  await run('ip', ipIn(a.hostNetns, ['link', 'set', a.hostIf, 'up']));
  await waitForwarding(a.hostIf, a.hostNetns);
}

/** How long a new bridge port may take to forward: STP's listening + learning (2 × forward delay; libvirt's bridges: 2 × 2 s). */
export const BRIDGE_PORT_FORWARDING_TIMEOUT_MS = 30_000;

/**
 * Waits until the bridge forwards on port `iface`. A bridge with STP on (libvirt's networks)
 * holds a new port in listening and learning for twice its forward delay; traffic sent before
 * that fails (the scenario's first probe of the Terraform VMs from its client namespace got
 * EHOSTUNREACH). Bridges the lab makes have STP off: their ports forward at once.
 */
export async function waitForwarding(iface: string, netns: string | null): Promise<void> {
  await waitFor(
    `bridge port ${iface}${netns ? ` (netns ${netns})` : ''} forwarding`,
    async () => {
      const { stdout } = await run('bridge', [...(netns ? ['-n', netns] : []), '-j', 'link', 'show', 'dev', iface]);
      const [port] = JSON.parse(stdout || '[]') as { state?: string }[];
      return port?.state === 'forwarding';
    },
    BRIDGE_PORT_FORWARDING_TIMEOUT_MS,
  );
}

/** The bridge an interface is plugged into (in `netns`, null: the host's), or null when it is not; throws when the interface does not exist. */
export async function bridgeOf(iface: string, netns: string | null): Promise<string | null> {
  const { stdout } = await run('ip', ipIn(netns, ['-j', 'link', 'show', 'dev', iface]));
  const [link] = JSON.parse(stdout) as { master?: string }[];
  return link?.master ?? null;
}

/** The pids of every process in `netns`; throws (EDGE_LAB_COMMAND_FAILED) when the namespace does not exist. */
export async function namespacePids(netns: string): Promise<number[]> {
  const { stdout } = await run('ip', ['netns', 'pids', netns]);
  return stdout.split(/\s+/).filter(Boolean).map(Number);
}

/** Kills every process inside a namespace (all of them are ours: we created the namespace). Nothing when it is gone. */
export async function killNamespaceProcesses(netns: string): Promise<void> {
  let pids: number[];
  try {
    pids = await namespacePids(netns);
  } catch (err) {
    squashError(err); // the namespace is already gone
    return;
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch (err) {
      squashError(err); // exited meanwhile
    }
  }
}

/** Kills what runs in a namespace and deletes it, which deletes its veth ends and so their peers. Idempotent. */
export async function deleteNamespace(netns: string): Promise<void> {
  await killNamespaceProcesses(netns);
  await tryRun('ip', ['netns', 'del', netns]);
}

/** Deletes an interface (in `netns`, null: the host's); false when there was none. */
export function deleteLink(iface: string, netns: string | null = null): Promise<boolean> {
  return tryRun('ip', ipIn(netns, ['link', 'del', iface]));
}

/** Last octet of the client's and the central server's addresses in the mesh's /24 (nodes use .11-.40). */
export const CLIENT_HOST_OCTET = 240;
export const CENTRAL_HOST_OCTET = 250;
export const EXTRA_ROLES = ['cl', 'db'] as const;
export type ExtraRole = (typeof EXTRA_ROLES)[number];

export interface ExtraNamespace {
  readonly role: ExtraRole;
  readonly netns: string;
  /** Host side of its veth (capture here). */
  readonly hostIf: string;
  /** Namespace holding `hostIf` and the bridge; null: the host's. */
  readonly hostNetns: string | null;
  readonly addr: string;
}

export function extraNamespace(mesh: string, subnet: string, role: ExtraRole, hostNetns: string | null = null): ExtraNamespace {
  const prefix = subnet.replace(/\.0\/24$/, '');
  const octet = role === 'cl' ? CLIENT_HOST_OCTET : CENTRAL_HOST_OCTET;
  return { role, netns: `${mesh}-${role}`, hostIf: `${mesh}-${role}h`, hostNetns, addr: `${prefix}.${octet}` };
}

/** Creates the namespace and plugs it into the mesh's bridge (in `ns.hostNetns`). */
export async function createExtraNamespace(ns: ExtraNamespace, bridge: string): Promise<void> {
  await attachNamespace({ netns: ns.netns, hostIf: ns.hostIf, peerIf: `${ns.netns}p`, hostNetns: ns.hostNetns, address: `${ns.addr}/24`, bridge });
}

/** Kills what runs in the scenario namespaces of `mesh` and deletes them (by name). Idempotent. */
export async function removeExtraNamespaces(mesh: string): Promise<string[]> {
  const existing = new Set(await listNamespaces());
  const found: string[] = [];
  for (const role of EXTRA_ROLES) {
    // the address is not needed to remove it
    const ns = extraNamespace(mesh, '0.0.0.0/24', role);
    if (existing.has(ns.netns)) found.push(ns.netns);
    await removeNamespace(ns);
  }
  return found;
}

/** Kills what runs in one scenario namespace and deletes it with its veth. Idempotent. */
export async function removeNamespace(ns: ExtraNamespace): Promise<void> {
  // deleting the namespace deletes its veth pair; the second call covers a half-made one
  await deleteNamespace(ns.netns);
  await deleteLink(ns.hostIf, ns.hostNetns);
}
