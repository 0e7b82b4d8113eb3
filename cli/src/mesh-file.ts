/**
 * The mesh description: how to reach every node of a mesh from the machine the CLI runs on.
 * Three things write it, in this one format (docs/reference/mesh-description.md):
 *
 * - the emulated mesh, `make mesh-up` (scenarios/mesh/src/plan/topology.ts): `.mesh/<name>/topology.json`
 *   and `.mesh/topology.json`;
 * - Ansible, `make provision` (ansible/lab/topology.py, from `ansible-inventory --list`);
 * - Terraform, `make tf-up` (terraform/modules/mesh-files): `.mesh/<name>/topology.json`, and
 *   `terraform/hack/tf.sh topology SCENARIO` prints where.
 *
 * The schema below is the format; `syncmesh mesh --schema` prints it as JSON Schema. Fields the CLI
 * does not use are still described (other tools read them); fields it does not know are kept.
 * Relative file paths are relative to the description's own folder.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { CliError } from './errors.js';

const url = z.string().refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'an http(s) URL');
const nodeId = z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/, 'a node id: letters, digits and ._:-, at most 64');
const hostPort = z.string().regex(/^[^\s:]+:\d{1,5}$/, 'host:port');

export const meshNodeSchema = z
  .object({
    id: nodeId.describe("the node's id: its SYNCMESH_NODE_ID, the target of every signed request to it"),
    function_url: url.describe("the node's Syncmesh function (on faasd: http://<address>:8080/function/syncmesh-fn)"),
    address: z.string().min(1).describe("the node's IP address or host name"),
    lat: z.number().min(-90).max(90).nullable().describe('latitude, null when unknown'),
    lon: z.number().min(-180).max(180).nullable().describe('longitude, null when unknown'),
    mongodb_uri: z.string().nullable().describe("the node's MongoDB as reachable from here; null when it is not (faasd nodes keep it inside)"),
    agent_address: hostPort.nullable().describe("the MISO agent's peer port (host:port), null when no agent runs"),
    peers: z.record(z.string(), url).describe("the URL this node's registry holds for each peer, by peer id (may be empty)"),
    namespace: z.string().nullable().describe("the node's network namespace (emulated mesh, Ansible lab) or the namespace of its VM's link; null: the host's"),
    host_interface: z.string().nullable().describe("the host side of the node's link (where to capture its traffic); null when there is none"),
    agent_peers: z
      .record(z.string(), z.string())
      .nullable()
      .optional()
      .describe("emulated mesh only: where this node's agent dials each peer's agent (the peers' own addresses)"),
    links: z
      .record(z.string(), hostPort)
      .optional()
      .describe("emulated mesh only: the link proxy on the host that this node's connection to each peer's function really crosses"),
    agent_links: z
      .record(z.string(), hostPort)
      .nullable()
      .optional()
      .describe('emulated mesh only: the link proxy each agent connection crosses; null with mDNS (direct links) or when no agent runs'),
    gateway_url: url.optional().describe('faasd nodes: the OpenFaaS gateway (/healthz, /system/info, /system/logs)'),
    basic_auth_file: z
      .string()
      .nullable()
      .optional()
      .describe("faasd nodes: a file holding the gateway's user:password (null: the credentials stay on the node)"),
    registry: hostPort.optional().describe("faasd nodes: the node's OCI registry (host:port, plain HTTP with basic auth) its faasd pulls function images from"),
    registry_auth_file: z
      .string()
      .nullable()
      .optional()
      .describe("faasd nodes: a file holding the registry's user:password (null: not known here; the node keeps its own)"),
    listener_url: url
      .nullable()
      .optional()
      .describe("the change-stream listener's health endpoints (/healthz, /readyz, /stats, /metrics); null or absent: not reachable from here"),
  })
  .loose();

export const meshDescriptionSchema = z
  .object({
    mesh: z.string().min(1).describe('the name of the mesh'),
    runtime: z
      .literal('faasd')
      .optional()
      .describe('"faasd" when every node is a faasd appliance (gateway, containers); absent: bare processes (the emulated mesh)'),
    isolation: z
      .enum(['netns', 'loopback', 'vm', 'host'])
      .describe(
        'how the nodes are kept apart: a network namespace each (emulated mesh, Ansible lab), loopback ports, VMs (Terraform) or hosts (Ansible on real machines)',
      ),
    subnet: z.string().nullable().describe("the nodes' subnet (CIDR), null when they share none"),
    host_address: z.string().nullable().describe("this machine's address on the nodes' network, or null"),
    latency: z.string().describe('how the links between nodes are shaped: none, site, regional, or a latency file'),
    forward_mode: z.enum(['parallel', 'sequential']).describe('how the functions fan a query out'),
    toxiproxy_api: z.string().nullable().describe('emulated mesh: the link emulation (toxiproxy) API; null elsewhere'),
    secret_file: z.string().min(1).describe('a file holding the mesh secret (mode 0600): registry changes are signed with it'),
    write_key_file: z.string().min(1).describe('a file holding the write key (mode 0600): data writes send Authorization: Bearer <key>'),
    logs_dir: z.string().nullable().optional().describe("emulated mesh: the folder of the node processes' logs (<node>.<role>.log); absent elsewhere"),
    created_at: z.string().optional().describe('when it was written (ISO 8601); Terraform writes none (its files change only when the mesh does)'),
    nodes: z
      .array(meshNodeSchema)
      .min(1)
      .max(64)
      .superRefine((nodes, ctx) => {
        const seen = new Set<string>();
        for (const [i, n] of nodes.entries()) {
          if (seen.has(n.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `node id '${n.id}' appears twice` });
          seen.add(n.id);
        }
      })
      .describe('every node of the mesh'),
  })
  .loose();

export type MeshNode = z.infer<typeof meshNodeSchema>;
export type MeshDescription = z.infer<typeof meshDescriptionSchema> & {
  /** Where it was read from (absolute). */
  readonly path: string;
};

/** The format as JSON Schema (what `syncmesh mesh --schema` prints). */
export function meshJsonSchema(): Record<string, unknown> {
  return {
    title: 'Syncmesh Edge mesh description (topology.json)',
    ...z.toJSONSchema(meshDescriptionSchema, { io: 'input' }),
  };
}

const WRITERS = 'make mesh-up (the emulated mesh), make provision (Ansible) or make tf-up (Terraform) writes one';

/** Reads and checks a mesh description; throws EDGE_CLI_MESH_FILE saying what is wrong. */
export function readMesh(file: string): MeshDescription {
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError('EDGE_CLI_MESH_FILE', `cannot read the mesh description ${path}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`, {
      hint: `give one with --mesh FILE or SYNCMESH_MESH; ${WRITERS}`,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CliError('EDGE_CLI_MESH_FILE', `the mesh description ${path} is not JSON: ${(err as Error).message}`, { hint: WRITERS });
  }
  const parsed = meshDescriptionSchema.safeParse(raw);
  if (!parsed.success) {
    const what = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`)
      .join('; ');
    throw new CliError('EDGE_CLI_MESH_FILE', `the mesh description ${path} is not valid: ${what}`, {
      hint: 'the format is in docs/reference/mesh-description.md (syncmesh mesh --schema prints it as JSON Schema)',
    });
  }
  const base = dirname(path);
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  const d = parsed.data;
  return {
    ...d,
    path,
    secret_file: abs(d.secret_file),
    write_key_file: abs(d.write_key_file),
    ...(d.logs_dir ? { logs_dir: abs(d.logs_dir) } : {}),
    nodes: d.nodes.map((n) => (n.basic_auth_file ? { ...n, basic_auth_file: abs(n.basic_auth_file) } : n)),
  };
}

/** A node by id, or by its position in the description (1-based, as in node-1). */
export function findNode(mesh: MeshDescription, ref: string): MeshNode {
  const byId = mesh.nodes.find((n) => n.id === ref);
  if (byId) return byId;
  if (/^\d+$/.test(ref)) {
    const byIndex = mesh.nodes[Number(ref) - 1];
    if (byIndex) return byIndex;
  }
  throw new CliError('EDGE_CLI_UNKNOWN_NODE', `no node '${ref}' in the mesh ${mesh.mesh} (${mesh.path})`, {
    hint: `use one of ${mesh.nodes.map((n) => n.id).join(', ')} (or its position, 1-${mesh.nodes.length})`,
  });
}

/** Nodes named in a comma-separated list (`all`: every node), in the description's order. */
export function findNodes(mesh: MeshDescription, list: string | undefined, fallback: 'all' | 'first'): MeshNode[] {
  if (list === undefined) return fallback === 'all' ? mesh.nodes : [mesh.nodes[0]!];
  if (list === 'all') return mesh.nodes;
  const wanted = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((r) => findNode(mesh, r).id);
  return mesh.nodes.filter((n) => wanted.includes(n.id));
}
