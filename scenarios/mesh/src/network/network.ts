/**
 * The mesh's network: its names and checks on top of the lab's namespace commands
 * (`@syncmesh-edge/lab`, lib/lab/src/netns.ts), the iptables rules that send a node's traffic
 * for its peers' addresses through the link proxies, and the ones that cut a node off.
 * Every name starts with the mesh name (see plan/plan.ts); the iptables rules live inside the node's
 * namespace, so deleting the namespace removes them too.
 */
import { MeshError } from '../errors.js';
import { kernelNames, linkProxies, overlaps, proxyAddress, type MeshPlan, type NodePlan, type ProxyPlan } from '../plan/plan.js';
import {
  attachNamespace,
  createBridge,
  deleteLink,
  deleteNamespace,
  listLinks,
  listNamespaces,
  listRoutes,
  NETNS_IF,
  runInNetns,
  tryRunInNetns,
} from '@syncmesh-edge/lab';

/** The interface name inside every node namespace, as on a real single-NIC appliance. */
export const NODE_IF = NETNS_IF;
/** mDNS and other link-local multicast (MISO agent discovery) leave through the node's interface. */
export const MULTICAST_ROUTE = '224.0.0.0/4';

/** Kernel objects that belong to a mesh by name, also the ones no state file knows about. */
export async function meshKernelObjects(name: string): Promise<{ netns: string[]; links: string[] }> {
  const nsRe = new RegExp(`^${name}-n\\d+$`);
  const linkRe = new RegExp(`^${name}-(br|h\\d+|c\\d+)$`);
  return {
    netns: (await listNamespaces()).filter((n) => nsRe.test(n)),
    links: (await listLinks()).filter((l) => linkRe.test(l)),
  };
}

/** Fails if any name of the plan is taken or its subnet overlaps an existing route. Changes nothing. */
export async function preflightNetwork(plan: MeshPlan): Promise<void> {
  const wanted = kernelNames(plan);
  const takenNs = new Set(await listNamespaces());
  const takenLinks = new Set(await listLinks());
  const clashes = [
    ...wanted.netns.filter((n) => takenNs.has(n)).map((n) => `namespace ${n}`),
    ...wanted.links.filter((l) => takenLinks.has(l)).map((l) => `interface ${l}`),
  ];
  if (clashes.length > 0) {
    throw new MeshError(
      'EDGE_MESH_NAME_TAKEN',
      `cannot start mesh '${plan.name}': ${clashes.slice(0, 5).join(', ')}${clashes.length > 5 ? ` and ${clashes.length - 5} more` : ''} already exist (another mesh with this name? run make mesh-down MESH_NAME=${plan.name}, or pick another MESH_NAME)`,
    );
  }
  for (const r of await listRoutes()) {
    // local/broadcast/multicast entries describe addresses, not reachable networks
    if (r.dst === 'default' || r.table === 'local' || (r.type !== undefined && r.type !== 'unicast')) continue;
    if (plan.subnet && overlaps(plan.subnet, r.dst)) {
      throw new MeshError(
        'EDGE_MESH_SUBNET_TAKEN',
        `cannot start mesh '${plan.name}': its subnet ${plan.subnet} overlaps the route ${r.dst}${r.dev ? ` dev ${r.dev}` : ''}; set MESH_SUBNET to a free 10.x.y.0/24 or pick another MESH_NAME`,
      );
    }
  }
}

/** The mesh's bridge, with the host's address in the mesh's /24. */
export async function createMeshBridge(plan: MeshPlan): Promise<void> {
  await createBridge(plan.bridge!, { address: `${plan.hostAddr}/24` });
}

/**
 * Creates the node's namespace, its veth into the bridge, its address, the multicast route and
 * the redirects of its links (before any service starts, so no connection bypasses a link).
 */
export async function createNodeNetwork(plan: MeshPlan, node: NodePlan): Promise<void> {
  await attachNamespace({
    netns: node.netns!,
    hostIf: node.hostIf!,
    peerIf: `${plan.name}-c${node.index}`,
    hostNetns: null,
    address: `${node.addr}/24`,
    bridge: plan.bridge!,
    routes: [MULTICAST_ROUTE],
  });
  await redirectLinks(plan, node);
}

/** The nat chain in each node namespace that sends connections to a peer's address through that link's proxy. */
export const LINK_CHAIN = 'MESH-LINKS';

/** The links `node` redirects: every proxy from it whose destination it names by its own address. */
export function redirectedLinks(plan: MeshPlan, node: NodePlan): ProxyPlan[] {
  return linkProxies(plan).filter((l) => l.from === node.index && l.redirected);
}

/**
 * The nat rules of `node`'s namespace (iptables-restore input, applied with --noflush): one DNAT
 * per link, a peer's `address:port` to the link's proxy on the host. The chain is jumped to from
 * OUTPUT (the node's own processes: the process runtime) and PREROUTING (containers on a bridge
 * inside the namespace: the faasd runtime's function and agent, whose connections are routed,
 * not sent, by the namespace). Conntrack rewrites the answers back, so a process sees the peer's
 * address at both ends, and toxiproxy's latency and cuts apply as before.
 */
export function linkRedirectRules(links: readonly ProxyPlan[]): string {
  const rules = links.map((l) => {
    const [addr, port] = l.upstream.split(':');
    return `-A ${LINK_CHAIN} -d ${addr}/32 -p tcp -m tcp --dport ${port} -j DNAT --to-destination ${proxyAddress(l)}`;
  });
  return ['*nat', `:${LINK_CHAIN} - [0:0]`, `-A OUTPUT -j ${LINK_CHAIN}`, `-A PREROUTING -j ${LINK_CHAIN}`, ...rules, 'COMMIT', ''].join('\n');
}

/** Installs `node`'s link redirects in its namespace (a fresh namespace: nothing to replace). */
export async function redirectLinks(plan: MeshPlan, node: NodePlan): Promise<void> {
  const links = redirectedLinks(plan, node);
  if (links.length === 0) return;
  await runInNetns(node.netns!, ['iptables-restore', '-w', '--noflush'], { input: linkRedirectRules(links) });
}

/** Removes every namespace and interface of the mesh (by name). Idempotent. */
export async function removeMeshNetwork(name: string): Promise<{ netns: string[]; links: string[] }> {
  const found = await meshKernelObjects(name);
  for (const ns of found.netns) await deleteNamespace(ns);
  // deleting a namespace deletes its veth end and so the host end; remove what is left
  const left = (await meshKernelObjects(name)).links;
  for (const l of left) await deleteLink(l);
  return found;
}

const CUT_RULES = [
  ['INPUT', '-i', NODE_IF, '-j', 'DROP'],
  ['OUTPUT', '-o', NODE_IF, '-j', 'DROP'],
] as const;

/** Drops everything on the node's interface inside its namespace (a pulled cable). */
export async function cutNodeFirewall(node: NodePlan): Promise<void> {
  const ns = node.netns!;
  for (const rule of CUT_RULES) if (!(await hasRule(ns, rule))) await runInNetns(ns, ['iptables', '-w', '-I', ...rule]);
}

export async function restoreNodeFirewall(node: NodePlan): Promise<void> {
  const ns = node.netns!;
  for (const rule of CUT_RULES) while (await hasRule(ns, rule)) await runInNetns(ns, ['iptables', '-w', '-D', ...rule]);
}

function hasRule(ns: string, rule: readonly string[]): Promise<boolean> {
  return tryRunInNetns(ns, ['iptables', '-w', '-C', ...rule]);
}

/** One connection the kernel tracks in a node's namespace: where it was sent, and who really answers it. */
export interface TrackedConnection {
  src: string;
  sport: number;
  /** The destination the process asked for (before any redirect). */
  dst: string;
  dport: number;
  /** The answering end after NAT: a link proxy on the host when the connection was redirected. */
  replySrc: string;
  replySport: number;
  state: string;
}

/** Parses /proc/net/nf_conntrack (TCP entries): the original tuple, then the reply tuple. */
export function parseConntrack(text: string): TrackedConnection[] {
  const out: TrackedConnection[] = [];
  for (const line of text.split('\n')) {
    if (!/\btcp\b/.test(line)) continue;
    const srcs = [...line.matchAll(/\bsrc=(\S+)/g)].map((m) => m[1]!);
    const dsts = [...line.matchAll(/\bdst=(\S+)/g)].map((m) => m[1]!);
    const sports = [...line.matchAll(/\bsport=(\d+)/g)].map((m) => Number(m[1]));
    const dports = [...line.matchAll(/\bdport=(\d+)/g)].map((m) => Number(m[1]));
    if (srcs.length < 2 || dsts.length < 2 || sports.length < 2 || dports.length < 2) continue;
    const state = /\btcp\s+\d+\s+\d+\s+([A-Z_]+)/.exec(line)?.[1] ?? '';
    out.push({ src: srcs[0]!, sport: sports[0]!, dst: dsts[0]!, dport: dports[0]!, replySrc: srcs[1]!, replySport: sports[1]!, state });
  }
  return out;
}

/** The TCP connections the kernel tracks in `node`'s namespace (the node's processes and its containers'). */
export async function trackedConnections(node: NodePlan): Promise<TrackedConnection[]> {
  return parseConntrack((await runInNetns(node.netns!, ['cat', '/proc/net/nf_conntrack'])).stdout);
}
