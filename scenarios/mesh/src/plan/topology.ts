/**
 * .mesh/<name>/topology.json (and .mesh/topology.json for the newest mesh): how to reach every
 * node from the machine that ran mesh-up. Every URL in it is reachable from there.
 */
import { join } from 'node:path';
import { proxyAddress, type MeshPlan, type NodePlan, type ProxyPlan } from './plan.js';
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
  /**
   * The URL this node's registry holds for each peer: the peer's own `function_url` (its namespace
   * redirects it to the link's proxy); the proxy's URL in loopback mode.
   */
  peers: Record<string, string>;
  /** The link proxy (host:port on the host, toxiproxy) that this node's traffic to each peer's function crosses. */
  links: Record<string, string>;
  /**
   * Where this node's agent dials each peer's agent (host:port): the peer's own agent address
   * (redirected to its agent link with static discovery; direct with mDNS), the agent link's
   * proxy in loopback mode; null when no agent runs.
   */
  agent_peers: Record<string, string> | null;
  /** The agent link proxy (host:port) to each peer's agent (static discovery); null when the agents' links are direct or no agent runs. */
  agent_links: Record<string, string> | null;
  /** faasd runtime only: the node's OpenFaaS gateway. */
  gateway_url?: string;
  /** faasd runtime only: file holding `user:password` of the gateway's basic auth. */
  basic_auth_file?: string;
  /** The listener's health endpoints (/healthz, /readyz, /stats, /metrics); null when no listener runs. */
  listener_url: string | null;
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
  /** The node processes' logs: <logs_dir>/<node>.<role>.log (the syncmesh CLI's `logs`). */
  logs_dir: string;
  nodes: TopologyNode[];
}

/** Where `node`'s agent reaches every other agent: as its agent links say, or (mDNS, no agent links) the agents themselves. */
function agentPeers(plan: MeshPlan, node: NodePlan): Record<string, string> {
  if (plan.agentLinks.length > 0) {
    return Object.fromEntries(plan.agentLinks.filter((l) => l.from === node.index).map((l) => [plan.nodes[l.to - 1]!.id, l.address]));
  }
  return Object.fromEntries(plan.nodes.filter((p) => p !== node).map((p) => [p.id, `${p.addr}:${p.agentPort}`]));
}

/** Per peer, the proxy of `node`'s link to it. */
function proxiesFrom(plan: MeshPlan, node: NodePlan, links: readonly ProxyPlan[]): Record<string, string> {
  return Object.fromEntries(links.filter((l) => l.from === node.index).map((l) => [plan.nodes[l.to - 1]!.id, proxyAddress(l)]));
}

export function buildTopology(state: MeshState): Topology {
  const { plan } = state;
  const hasAgent = state.runtime === 'faasd' || state.processes.some((p) => p.role === 'agent');
  const faasd = state.runtime === 'faasd';
  const hasListener = faasd || state.processes.some((p) => p.role === 'listener');
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
    logs_dir: join(plan.stateDir, 'logs'),
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
        links: proxiesFrom(plan, n, plan.links),
        agent_peers: hasAgent ? agentPeers(plan, n) : null,
        agent_links: hasAgent && plan.agentLinks.length > 0 ? proxiesFrom(plan, n, plan.agentLinks) : null,
        ...(faasd ? { gateway_url: `http://${n.addr}:8080`, basic_auth_file: join(n.dir, 'faasd', 'basic-auth') } : {}),
        listener_url: hasListener ? `http://${n.addr}:${n.listenerPort}` : null,
        ...(faasd ? { registry: `${n.addr}:5000`, registry_auth_file: join(n.dir, 'faasd', 'registry-auth') } : {}),
      };
    }),
  };
}
