/**
 * .mesh/<name>/topology.json (and .mesh/topology.json for the newest mesh): how to reach every
 * node from the machine that ran mesh-up. Every URL in it is reachable from there.
 */
import { join } from 'node:path';
import type { MeshPlan, NodePlan } from './plan.js';
import type { MeshState } from './state.js';

export interface TopologyNode {
  id: string;
  /** Direct URL of the node's function (no link emulation): what a client on this machine uses. */
  function_url: string;
  mongodb_uri: string;
  /** MISO agent address (host:port) when the agent runs on the nodes, else null. */
  agent_address: string | null;
  lat: number | null;
  lon: number | null;
  /** Network namespace (null without isolation). */
  namespace: string | null;
  /** The node's IP address. */
  address: string;
  /** Host side of the node's link (capture here), null without isolation. */
  host_interface: string | null;
  /** How this node reaches each peer: through the emulated link (toxiproxy). */
  peers: Record<string, string>;
  /**
   * How this node's agent reaches each peer's agent (host:port): through the emulated agent link
   * with static discovery, the peer's own agent address with mDNS; null when no agent runs.
   */
  agent_peers: Record<string, string> | null;
  /** faasd runtime only: the node's OpenFaaS gateway. */
  gateway_url?: string;
  /** faasd runtime only: file holding `user:password` of the gateway's basic auth. */
  basic_auth_file?: string;
  /** faasd runtime only: the node's OCI registry (host:port, plain HTTP with basic auth) that its faasd pulls function images from. */
  registry?: string;
  /** faasd runtime only: file holding `user:password` of the node's registry. */
  registry_auth_file?: string;
}

export interface Topology {
  /** Present for the faasd runtime only ("faasd"). */
  runtime?: 'faasd';
  mesh: string;
  isolation: 'netns' | 'loopback';
  subnet: string | null;
  host_address: string;
  latency: string;
  forward_mode: 'parallel' | 'sequential';
  toxiproxy_api: string;
  /** File with the mesh secret (registry requests must be signed with it). */
  secret_file: string;
  /** File with the write key: data writes (addSensors, update, delete*) send `Authorization: Bearer <key>`. */
  write_key_file: string;
  created_at: string;
  nodes: TopologyNode[];
}

/** Where `node`'s agent reaches every other agent: its agent links, or (mDNS, no agent links) the agents themselves. */
function agentPeers(plan: MeshPlan, node: NodePlan): Record<string, string> {
  if (plan.agentLinks.length > 0) {
    return Object.fromEntries(plan.agentLinks.filter((l) => l.from === node.index).map((l) => [plan.nodes[l.to - 1]!.id, l.address]));
  }
  return Object.fromEntries(plan.nodes.filter((p) => p !== node).map((p) => [p.id, `${p.addr}:${p.agentPort}`]));
}

export function buildTopology(state: MeshState): Topology {
  const { plan } = state;
  const hasAgent = state.runtime === 'faasd' || state.processes.some((p) => p.role === 'agent');
  const faasd = state.runtime === 'faasd';
  return {
    ...(faasd ? { runtime: 'faasd' as const } : {}),
    mesh: plan.name,
    isolation: plan.isolation,
    subnet: plan.subnet,
    host_address: plan.hostAddr,
    latency: state.latency,
    forward_mode: state.forwardMode,
    toxiproxy_api: `http://${plan.toxiproxyApi.host}:${plan.toxiproxyApi.port}`,
    secret_file: join(plan.stateDir, 'secret'),
    write_key_file: join(plan.stateDir, 'write-key'),
    created_at: state.createdAt,
    nodes: plan.nodes.map((n) => {
      const c = state.coords[String(n.index)];
      return {
        id: n.id,
        function_url: n.functionUrl,
        mongodb_uri: n.mongoUri,
        agent_address: hasAgent ? `${n.addr}:${n.agentPort}` : null,
        lat: c?.lat ?? null,
        lon: c?.lon ?? null,
        namespace: n.netns,
        address: n.addr,
        host_interface: n.hostIf,
        peers: Object.fromEntries(plan.links.filter((l) => l.from === n.index).map((l) => [plan.nodes[l.to - 1]!.id, l.url])),
        agent_peers: hasAgent ? agentPeers(plan, n) : null,
        ...(faasd ? { gateway_url: `http://${n.addr}:8080`, basic_auth_file: join(n.dir, 'faasd', 'basic-auth') } : {}),
        ...(faasd ? { registry: `${n.addr}:5000`, registry_auth_file: join(n.dir, 'faasd', 'registry-auth') } : {}),
      };
    }),
  };
}
