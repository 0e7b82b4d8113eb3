/**
 * Network namespaces, veths and the bridge (iproute2), and the iptables rules that cut a node
 * off. Every name starts with the mesh name (see plan.ts); the iptables rules live inside the
 * node's namespace, so deleting the namespace removes them too.
 */
import { MeshError, squashError } from './errors.js';
import { kernelNames, overlaps, type MeshPlan, type NodePlan } from './plan.js';
import { run, tryRun } from '@syncmesh-edge/lab';

/** The interface name inside every node namespace, as on a real single-NIC appliance. */
export const NODE_IF = 'eth0';
/** mDNS and other link-local multicast (MISO agent discovery) leave through the node's interface. */
export const MULTICAST_ROUTE = '224.0.0.0/4';

export async function listNetns(): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list']);
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter((n) => n.length > 0);
}

export async function listLinks(): Promise<string[]> {
  const { stdout } = await run('ip', ['-j', 'link', 'show']);
  return (JSON.parse(stdout) as { ifname: string }[]).map((l) => l.ifname);
}

/** Kernel objects that belong to a mesh by name, also the ones no state file knows about. */
export async function meshKernelObjects(name: string): Promise<{ netns: string[]; links: string[] }> {
  const nsRe = new RegExp(`^${name}-n\\d+$`);
  const linkRe = new RegExp(`^${name}-(br|h\\d+|c\\d+)$`);
  return {
    netns: (await listNetns()).filter((n) => nsRe.test(n)),
    links: (await listLinks()).filter((l) => linkRe.test(l)),
  };
}

/** Fails if any name of the plan is taken or its subnet overlaps an existing route. Changes nothing. */
export async function preflightNetwork(plan: MeshPlan): Promise<void> {
  const wanted = kernelNames(plan);
  const takenNs = new Set(await listNetns());
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
  const { stdout } = await run('ip', ['-4', '-j', 'route', 'show', 'table', 'all']);
  const routes = JSON.parse(stdout) as { dst: string; dev?: string; table?: string; type?: string }[];
  for (const r of routes) {
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

function nsExec(ns: string, args: string[]): Promise<unknown> {
  return run('ip', ['netns', 'exec', ns, ...args]);
}

export async function createBridge(plan: MeshPlan): Promise<void> {
  const br = plan.bridge!;
  await run('ip', ['link', 'add', br, 'type', 'bridge']);
  await run('ip', ['addr', 'add', `${plan.hostAddr}/24`, 'dev', br]);
  await run('ip', ['link', 'set', br, 'up']);
}

/** Creates the node's namespace, its veth into the bridge, its address and routes. */
export async function createNodeNetwork(plan: MeshPlan, node: NodePlan): Promise<void> {
  const ns = node.netns!;
  const hostIf = node.hostIf!;
  const tmpIf = `${plan.name}-c${node.index}`;
  await run('ip', ['netns', 'add', ns]);
  await run('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', tmpIf]);
  await run('ip', ['link', 'set', tmpIf, 'netns', ns]);
  await run('ip', ['-n', ns, 'link', 'set', tmpIf, 'name', NODE_IF]);
  await run('ip', ['-n', ns, 'addr', 'add', `${node.addr}/24`, 'dev', NODE_IF]);
  await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  await run('ip', ['-n', ns, 'link', 'set', NODE_IF, 'up']);
  await run('ip', ['-n', ns, 'route', 'add', MULTICAST_ROUTE, 'dev', NODE_IF]);
  await run('ip', ['link', 'set', hostIf, 'master', plan.bridge!]);
  await run('ip', ['link', 'set', hostIf, 'up']);
}

/** Kills every process inside a namespace (all of them are ours: we created the namespace). */
export async function killNetnsProcesses(ns: string): Promise<void> {
  let pids: number[] = [];
  try {
    const { stdout } = await run('ip', ['netns', 'pids', ns]);
    pids = stdout.split(/\s+/).filter(Boolean).map(Number);
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

/** Removes every namespace and interface of the mesh (by name). Idempotent. */
export async function removeMeshNetwork(name: string): Promise<{ netns: string[]; links: string[] }> {
  const found = await meshKernelObjects(name);
  for (const ns of found.netns) {
    await killNetnsProcesses(ns);
    await tryRun('ip', ['netns', 'del', ns]);
  }
  // deleting a namespace deletes its veth end and so the host end; remove what is left
  const left = (await meshKernelObjects(name)).links;
  for (const l of left) await tryRun('ip', ['link', 'del', l]);
  return found;
}

/** Drops everything on the node's interface inside its namespace (a pulled cable). */
export async function cutNodeFirewall(node: NodePlan): Promise<void> {
  const ns = node.netns!;
  if (!(await hasRule(ns, ['INPUT', '-i', NODE_IF, '-j', 'DROP']))) await nsExec(ns, ['iptables', '-w', '-I', 'INPUT', '-i', NODE_IF, '-j', 'DROP']);
  if (!(await hasRule(ns, ['OUTPUT', '-o', NODE_IF, '-j', 'DROP']))) await nsExec(ns, ['iptables', '-w', '-I', 'OUTPUT', '-o', NODE_IF, '-j', 'DROP']);
}

export async function restoreNodeFirewall(node: NodePlan): Promise<void> {
  const ns = node.netns!;
  while (await hasRule(ns, ['INPUT', '-i', NODE_IF, '-j', 'DROP'])) await nsExec(ns, ['iptables', '-w', '-D', 'INPUT', '-i', NODE_IF, '-j', 'DROP']);
  while (await hasRule(ns, ['OUTPUT', '-o', NODE_IF, '-j', 'DROP'])) await nsExec(ns, ['iptables', '-w', '-D', 'OUTPUT', '-o', NODE_IF, '-j', 'DROP']);
}

async function hasRule(ns: string, rule: string[]): Promise<boolean> {
  return tryRun('ip', ['netns', 'exec', ns, 'iptables', '-w', '-C', ...rule]);
}
