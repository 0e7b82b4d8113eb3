/**
 * `make mesh-capture` and the demo's byte counts: the lab's pcap capture (`@syncmesh-edge/lab`:
 * `tcpdump -w`, the same capture and classifier `make scenario` uses) classified from the mesh's
 * topology, every packet once: client traffic, function to function (per directed pair), agent
 * to agent (per directed pair), MongoDB, and what is not counted (relay legs of the emulated
 * links, ARP, mDNS).
 *
 * - The emulated mesh (netns): tcpdump on every node's link (host side of its veth) and on the
 *   client's. The client runs in its own namespace on the mesh's bridge (`<mesh>-cl`), because
 *   the host is where the link proxies run: traffic from the host's address to a node's function
 *   is the second leg of a proxied link, not a client.
 * - VMs on a bridge (the Terraform meshes, `isolation: "vm"`): tcpdump on the bridge, which sees
 *   every packet between the VMs and from the host once; the host is the client.
 * - Loopback meshes share one address between all processes: their traffic cannot be told
 *   apart, and capture refuses them (EDGE_LAB_CAPTURE).
 */
import {
  createExtraNamespace,
  extraNamespace,
  LabError,
  layoutFromTopology,
  removeNamespace,
  startCapture,
  type CaptureTarget,
  type ExtraNamespace,
  type PhaseTraffic,
  type TopologyLike,
} from '@syncmesh-edge/lab';

/** What capture reads of `.mesh/<name>/topology.json` (Terraform writes `isolation: "vm"`). */
export interface CaptureTopology extends TopologyLike {
  mesh: string;
  isolation: string;
  subnet: string | null;
  nodes: (TopologyLike['nodes'][number] & { host_interface: string | null })[];
}

export interface MeshTraffic extends PhaseTraffic {
  mesh: string;
  /** The client's address (the client namespace's, or the host's for VMs). */
  client: string | null;
}

export interface MeshCaptureOptions {
  /** Folder for the pcap files (kept: they are the evidence). */
  dir: string;
  phase?: string;
  /** The emulated mesh: the client namespace (from clientNamespace()). */
  client?: ExtraNamespace;
  /** VMs: the bridge to capture on. */
  bridge?: string;
}

export interface MeshCapture {
  /** Stops tcpdump and classifies the pcaps. Safe to call twice. */
  stop(): Promise<MeshTraffic>;
}

/** Starts tcpdump on the mesh's links (or its bridge); resolves once every capture listens. */
export async function startMeshCapture(topology: CaptureTopology, opts: MeshCaptureOptions): Promise<MeshCapture> {
  let targets: CaptureTarget[];
  let clientAddrs: string[];
  if (opts.bridge) {
    targets = [{ iface: opts.bridge, kind: 'bridge' }];
    clientAddrs = [topology.host_address, ...(opts.client ? [opts.client.addr] : [])];
  } else if (topology.isolation === 'netns') {
    targets = topology.nodes.map((n) => ({ iface: n.host_interface!, kind: 'node' as const, node: n.id }));
    if (opts.client) targets.push({ iface: opts.client.hostIf, kind: 'client' });
    clientAddrs = opts.client ? [opts.client.addr] : [];
  } else {
    throw new LabError(
      'EDGE_LAB_CAPTURE',
      `mesh '${topology.mesh}' has isolation '${topology.isolation}': capture needs the nodes' own addresses (MESH_ISOLATION=netns, or VMs with MESH_CAPTURE_IFACE=<bridge>)`,
    );
  }
  const cap = await startCapture(opts.phase ?? 'capture', opts.dir, targets, layoutFromTopology(topology, { clientAddrs }));
  let result: Promise<MeshTraffic> | undefined;
  return {
    stop() {
      result ??= cap.stop().then((t) => ({ ...t, mesh: topology.mesh, client: clientAddrs[0] ?? null }));
      return result;
    },
  };
}

/** Creates the emulated mesh's client namespace (`<mesh>-cl`) on its bridge; remove it with removeNamespace(). */
export async function clientNamespace(mesh: string, subnet: string, bridge: string): Promise<ExtraNamespace> {
  const ns = extraNamespace(mesh, subnet, 'cl');
  await removeNamespace(ns); // a leftover of an interrupted run
  await createExtraNamespace(ns, bridge);
  return ns;
}
