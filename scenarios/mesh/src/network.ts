/**
 * The mesh's network: its names and checks on top of the lab's namespace commands
 * (`@syncmesh-edge/lab`, lib/lab/src/netns.ts), and the iptables rules that cut a node off.
 * Every name starts with the mesh name (see plan.ts); the iptables rules live inside the node's
 * namespace, so deleting the namespace removes them too.
 */
import { MeshError } from './errors.js';
import { kernelNames, overlaps, type MeshPlan, type NodePlan } from './plan.js';
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

/** Creates the node's namespace, its veth into the bridge, its address and the multicast route. */
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
