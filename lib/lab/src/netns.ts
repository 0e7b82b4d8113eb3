/**
 * The two namespaces the lab adds to a running mesh, on the mesh's bridge: the client (k6, the
 * demo's queries and `make mesh-capture`'s command run there, so client traffic has its own
 * address and interface) and the baseline's central server. Names start with the mesh name (`<mesh>-cl`, `<mesh>-db`; host ends `<mesh>-clh`,
 * `<mesh>-dbh`), so two meshes never collide, and removeExtraNamespaces() finds them by name
 * also after a crash. The bridge may live in another namespace than the host's (libvirt's, for
 * the Terraform VMs): the host end of the veth then lives there too (`hostNetns`).
 */
import { squashError } from '@syncmesh-edge/log';
import { run, tryRun } from './sys.js';

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

/** `ip` arguments for the namespace `netns` (null: the host's). */
function ipIn(netns: string | null, args: readonly string[]): string[] {
  return netns ? ['-n', netns, ...args] : [...args];
}

/** Creates the namespace and plugs it into the mesh's bridge (in `ns.hostNetns`). */
export async function createExtraNamespace(ns: ExtraNamespace, bridge: string): Promise<void> {
  const tmpIf = `${ns.netns}p`;
  await run('ip', ['netns', 'add', ns.netns]);
  await run('ip', ['link', 'add', ns.hostIf, 'type', 'veth', 'peer', 'name', tmpIf]);
  await run('ip', ['link', 'set', tmpIf, 'netns', ns.netns]);
  if (ns.hostNetns) await run('ip', ['link', 'set', ns.hostIf, 'netns', ns.hostNetns]);
  await run('ip', ['-n', ns.netns, 'link', 'set', tmpIf, 'name', 'eth0']);
  await run('ip', ['-n', ns.netns, 'addr', 'add', `${ns.addr}/24`, 'dev', 'eth0']);
  await run('ip', ['-n', ns.netns, 'link', 'set', 'lo', 'up']);
  await run('ip', ['-n', ns.netns, 'link', 'set', 'eth0', 'up']);
  await run('ip', ipIn(ns.hostNetns, ['link', 'set', ns.hostIf, 'master', bridge]));
  await run('ip', ipIn(ns.hostNetns, ['link', 'set', ns.hostIf, 'up']));
}

/** The bridge an interface is plugged into (in `netns`, null: the host's), or null when it is not; throws when the interface does not exist. */
export async function bridgeOf(iface: string, netns: string | null): Promise<string | null> {
  const { stdout } = await run('ip', ipIn(netns, ['-j', 'link', 'show', 'dev', iface]));
  const [link] = JSON.parse(stdout) as { master?: string }[];
  return link?.master ?? null;
}

/** Kills what runs in the scenario namespaces of `mesh` and deletes them (by name). Idempotent. */
export async function removeExtraNamespaces(mesh: string): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list']);
  const existing = new Set(stdout.split('\n').map((l) => l.trim().split(/\s+/)[0] ?? ''));
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
  try {
    const pids = (await run('ip', ['netns', 'pids', ns.netns])).stdout.split(/\s+/).filter(Boolean).map(Number);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (err) {
        squashError(err); // exited meanwhile
      }
    }
  } catch (err) {
    squashError(err); // the namespace is already gone
  }
  // deleting the namespace deletes its veth pair; the second call covers a half-made one
  await tryRun('ip', ['netns', 'del', ns.netns]);
  await tryRun('ip', ipIn(ns.hostNetns, ['link', 'del', ns.hostIf]));
}

export function inNetns(netns: string, argv: readonly string[]): string[] {
  return ['ip', 'netns', 'exec', netns, ...argv];
}
