/**
 * The registry verbs: `nodes` (read), `add`, `remove`, `subscribe`, `unsubscribe` (signed changes,
 * signing.ts). Each node keeps its own registry (functions/syncmesh/README.md, "Meta schema"): a
 * change is sent to every target node, all at once, and each answers for itself; one refusal does
 * not stop the others, and the verb exits 1 naming it.
 *
 * "B subscribes to A" is B marked `subscribed` in A's registry: A then replicates its writes to B.
 */
import type { Parsed, VerbSpec } from '../args.js';
import { numberOption } from '../args.js';
import { meta, pool } from '../client.js';
import type { Context, Verb } from '../context.js';
import { CliError } from '../errors.js';
import { findNode, findNodes, type MeshNode } from '../mesh-file.js';
import { num, table, exitOf, type VerbOutcome } from '../output.js';
import { credentialFor, credentialIfReadable } from '../signing.js';
import type { MeshNode as MeshNodeEntry } from '@syncmesh-edge/syncmesh-fn';

/** A node as a registry answers it (the function's own type; a type only, nothing of the function is loaded). */
export type RegistryEntry = MeshNodeEntry;

const FIELDS = 'id address lat lon distance own_node subscribed';
const ADD = `mutation($n: NodeInput!) { addNode(node: $n) { ${FIELDS} } }`;
const UPDATE = `mutation($id: ID!, $p: NodePatch!) { updateNode(id: $id, node: $p) { ${FIELDS} } }`;
const DELETE = 'mutation($id: ID!) { deleteNode(id: $id) }';

/** One target's answer to a change. */
export interface TargetResult {
  node: string;
  result: 'added' | 'updated' | 'removed' | 'absent' | 'subscribed' | 'added and subscribed' | 'unsubscribed' | 'failed';
  entry?: RegistryEntry;
  error?: Record<string, unknown>;
}

const targetsOption = (description: string) => ({ type: 'string' as const, value: 'NODES', description, complete: 'node' as const });

/** Where `target` reaches `id`: its registry's URL for it in the description, else the node's own function URL. */
function addressAt(target: MeshNode, peer: MeshNode): string {
  return target.id === peer.id ? peer.function_url : (target.peers[peer.id] ?? peer.function_url);
}

/** Applies `change` at every target; the outcome lists each, problems name the failures. */
async function applyEverywhere(
  ctx: Context,
  verb: string,
  id: string,
  targets: MeshNode[],
  change: (target: MeshNode) => Promise<Omit<TargetResult, 'node'>>,
): Promise<VerbOutcome> {
  if (targets.length === 0) throw new CliError('EDGE_CLI_USAGE', `syncmesh ${verb}: no target node left`, { hint: `name them with --on / --to / --from` });
  const results = await pool(targets, ctx.config.concurrency, async (t): Promise<TargetResult> => {
    try {
      return { node: t.id, ...(await change(t)) };
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      return { node: t.id, result: 'failed', error: err.toJSON() };
    }
  });
  const problems = results
    .filter((r) => r.result === 'failed')
    .map((r) => {
      const message = String(r.error?.['message']);
      return `${message.startsWith(`${r.node} `) ? '' : `${r.node}: `}${message} (${String(r.error?.['code'])})${r.error?.['hint'] ? `; what to do: ${String(r.error['hint'])}` : ''}`;
    });
  const text = table(
    ['NODE', 'RESULT', 'ENTRY'],
    results.map((r) => [
      r.node,
      r.result,
      r.entry
        ? `${r.entry.id} ${r.entry.address} (${r.entry.lat}, ${r.entry.lon})${r.entry.subscribed ? ' subscribed' : ''}${r.entry.own_node ? ' own' : ''}`
        : String(r.error?.['remote_code'] ?? r.error?.['code'] ?? ''),
    ]),
  );
  return { code: exitOf(problems), result: { verb, id, targets: results }, text, problems };
}

function isCode(err: unknown, code: string): boolean {
  return err instanceof CliError && err.remoteCode === code;
}

// ------------------------------------------------------------------------------------ nodes

const nodesSpec: VerbSpec = {
  name: 'nodes',
  summary: "A node's registry: the nodes it knows, their addresses, distances and who subscribes",
  details: 'Reads the registry of one node (the first of the description by default), or of every node with --all.',
  options: {
    node: { type: 'string', value: 'NODE', description: 'whose registry (id or position; default: the first node)', complete: 'node' },
    all: { type: 'boolean', description: "every node's registry" },
  },
  positionals: [],
  examples: ['syncmesh nodes', 'syncmesh nodes --node node-2', 'syncmesh nodes --all --json'],
};

export const nodesVerb: Verb = {
  spec: nodesSpec,
  async run(ctx, args) {
    const mesh = ctx.mesh();
    if (args.values['all'] && args.values['node'])
      throw new CliError('EDGE_CLI_USAGE', 'syncmesh nodes: give --node or --all, not both', { hint: 'syncmesh nodes --help' });
    const targets = args.values['all'] ? mesh.nodes : [findNode(mesh, (args.values['node'] as string | undefined) ?? mesh.nodes[0]!.id)];
    const credential = credentialIfReadable(mesh);
    const read = await pool(targets, ctx.config.concurrency, async (t) => {
      try {
        const data = await meta(t, `{ nodes { ${FIELDS} } }`, {}, { timeoutMs: ctx.timeoutMs, credential });
        return { node: t.id, registry: (data['nodes'] as RegistryEntry[]) ?? [] };
      } catch (err) {
        if (!(err instanceof CliError)) throw err;
        return { node: t.id, registry: null, error: err.toJSON() };
      }
    });
    const problems = read
      .filter((r) => r.error)
      .map(
        (r) => `${r.node}: ${String(r.error!['message'])} (${String(r.error!['code'])})${r.error!['hint'] ? `; what to do: ${String(r.error!['hint'])}` : ''}`,
      );
    const text = read
      .map((r) =>
        r.registry
          ? `${r.node}'s registry:\n${table(
              ['ID', 'ADDRESS', 'LAT', 'LON', 'DISTANCE', 'OWN', 'SUBSCRIBED'],
              r.registry.map((n) => [
                n.id,
                n.address,
                String(n.lat),
                String(n.lon),
                n.distance === null ? '-' : `${num(n.distance, 1)} km`,
                n.own_node ? 'own' : '',
                n.subscribed ? 'yes' : '',
              ]),
            )}`
          : `${r.node}: registry not read`,
      )
      .join('\n\n');
    return { code: exitOf(problems), result: args.values['all'] ? { registries: read } : read[0], text, problems };
  },
};

// ------------------------------------------------------------------------------------ add

const addSpec: VerbSpec = {
  name: 'add',
  summary: 'Register a node in the registries of the mesh (signed): added, or updated when it is there',
  details: [
    'A node of the description needs no more: its address (the URL each target reaches it at) and',
    'coordinates come from there. Another node needs --address, --lat and --lon. The targets are',
    'every other node of the description, or --on.',
  ].join('\n'),
  options: {
    address: { type: 'string', value: 'URL', description: "the node's function URL, e.g. http://10.0.0.5:8080/function/syncmesh-fn" },
    lat: { type: 'string', value: 'DEG', description: 'latitude' },
    lon: { type: 'string', value: 'DEG', description: 'longitude' },
    on: targetsOption('the registries to add it to (ids or positions, comma-separated, or all; default: every other node)'),
    own: { type: 'boolean', description: "mark it as the target's own node (with --on that node only)" },
  },
  positionals: [{ name: 'id', description: 'the node id', required: true, complete: 'node' }],
  examples: ['syncmesh add node-4 --address http://10.0.0.14:8080/function/syncmesh-fn --lat 42.66 --lon 23.31', 'syncmesh add node-2 --on node-1'],
};

export const addVerb: Verb = {
  spec: addSpec,
  async run(ctx, args) {
    const mesh = ctx.mesh();
    const id = args.positionals[0]!;
    const known = mesh.nodes.find((n) => n.id === id);
    const lat = numberOption('add', 'lat', args.values['lat'], { min: -90, max: 90 }) ?? known?.lat ?? undefined;
    const lon = numberOption('add', 'lon', args.values['lon'], { min: -180, max: 180 }) ?? known?.lon ?? undefined;
    const address = args.values['address'] as string | undefined;
    if (address !== undefined && !(URL.canParse(address) && /^https?:$/.test(new URL(address).protocol))) {
      throw new CliError('EDGE_CLI_USAGE', `syncmesh add: --address '${address}' is not an http(s) URL`, {
        hint: 'e.g. http://10.0.0.5:8080/function/syncmesh-fn',
      });
    }
    if ((!known && address === undefined) || lat === undefined || lon === undefined || lat === null || lon === null) {
      throw new CliError(
        'EDGE_CLI_USAGE',
        `syncmesh add: ${id} is ${known ? 'in the description without coordinates' : 'not in the mesh description'}: give --address, --lat and --lon`,
        {
          hint: 'syncmesh add --help',
        },
      );
    }
    const own = args.values['own'] === true;
    const targets = args.values['on'] ? findNodes(mesh, args.values['on'] as string, 'all') : mesh.nodes.filter((n) => n.id !== id);
    if (own && targets.length !== 1)
      throw new CliError('EDGE_CLI_USAGE', 'syncmesh add: --own needs exactly one --on node', { hint: 'syncmesh add ID --on ID --own' });
    const credential = credentialFor(mesh);
    return applyEverywhere(ctx, 'add', id, targets, async (t) => {
      const where = address ?? addressAt(t, known!);
      const opts = { timeoutMs: ctx.timeoutMs, credential };
      try {
        const data = await meta(t, ADD, { n: { id, address: where, lat, lon, ...(own ? { own_node: true } : {}) } }, opts);
        return { result: 'added', entry: data['addNode'] as RegistryEntry };
      } catch (err) {
        if (!isCode(err, 'EDGE_SYNCMESH_NODE_EXISTS')) throw err;
        const data = await meta(t, UPDATE, { id, p: { address: where, lat, lon, ...(own ? { own_node: true } : {}) } }, opts);
        return { result: 'updated', entry: data['updateNode'] as RegistryEntry };
      }
    });
  },
};

// ------------------------------------------------------------------------------------ remove

const removeSpec: VerbSpec = {
  name: 'remove',
  summary: 'Remove a node from the registries of the mesh (signed); "absent" where it was not',
  details: 'The targets are every other node of the description, or --on. Its replicas stay where they are.',
  options: { on: targetsOption('the registries to remove it from (comma-separated, or all; default: every other node)') },
  positionals: [{ name: 'id', description: 'the node id', required: true, complete: 'node' }],
  examples: ['syncmesh remove node-4', 'syncmesh remove node-4 --on node-1,node-2'],
};

export const removeVerb: Verb = {
  spec: removeSpec,
  async run(ctx, args) {
    const mesh = ctx.mesh();
    const id = args.positionals[0]!;
    const targets = args.values['on'] ? findNodes(mesh, args.values['on'] as string, 'all') : mesh.nodes.filter((n) => n.id !== id);
    const credential = credentialFor(mesh);
    return applyEverywhere(ctx, 'remove', id, targets, async (t) => {
      const data = await meta(t, DELETE, { id }, { timeoutMs: ctx.timeoutMs, credential });
      return { result: data['deleteNode'] === true ? 'removed' : 'absent' };
    });
  },
};

// ------------------------------------------------------------------------------------ subscribe

function subscriptionVerb(name: 'subscribe' | 'unsubscribe'): Verb {
  const on = name === 'subscribe';
  const flag = on ? 'to' : 'from';
  const spec: VerbSpec = {
    name,
    summary: on
      ? "Make a node receive other nodes' writes: mark it subscribed in their registries (signed)"
      : 'Stop a node receiving writes: unmark it in the registries of the given nodes (signed)',
    details: on
      ? [
          `syncmesh subscribe B --to A: A replicates its writes to B, first its existing readings (an initial`,
          "sync; --no-initial-sync skips it). B is added to A's registry when it is missing there and is a",
          'node of the description.',
        ].join('\n')
      : 'syncmesh unsubscribe B --from A: A stops replicating to B. B keeps the replicas it holds.',
    options: {
      [flag]: targetsOption(
        on ? 'the nodes whose writes it receives (comma-separated, or all)' : 'the nodes it stops receiving from (comma-separated, or all)',
      ),
      ...(on ? { 'no-initial-sync': { type: 'boolean' as const, description: 'do not copy the existing readings first' } } : {}),
    },
    positionals: [{ name: 'subscriber', description: 'the node that receives the writes', required: true, complete: 'node' }],
    examples: on ? ['syncmesh subscribe node-2 --to node-1', 'syncmesh subscribe node-3 --to all --json'] : ['syncmesh unsubscribe node-2 --from node-1'],
  };
  return {
    spec,
    async run(ctx: Context, args: Parsed) {
      const mesh = ctx.mesh();
      const id = args.positionals[0]!;
      const list = args.values[flag] as string | undefined;
      if (!list) throw new CliError('EDGE_CLI_USAGE', `syncmesh ${name}: --${flag} NODES is required`, { hint: `syncmesh ${name} --help` });
      const targets = findNodes(mesh, list, 'all').filter((n) => n.id !== id);
      const known = mesh.nodes.find((n) => n.id === id);
      const initialSync = args.values['no-initial-sync'] !== true;
      const credential = credentialFor(mesh);
      return applyEverywhere(ctx, name, id, targets, async (t) => {
        const opts = { timeoutMs: ctx.timeoutMs, credential };
        try {
          const data = await meta(t, UPDATE, { id, p: on ? { subscribed: true, initial_sync: initialSync } : { subscribed: false } }, opts);
          return { result: on ? 'subscribed' : 'unsubscribed', entry: data['updateNode'] as RegistryEntry };
        } catch (err) {
          if (!isCode(err, 'EDGE_SYNCMESH_NODE_NOT_FOUND')) throw err;
          if (!on) return { result: 'absent' };
          if (!known || known.lat === null || known.lon === null) {
            throw new CliError('EDGE_CLI_REFUSED', `${id} is not in ${t.id}'s registry`, {
              hint: `register it first: syncmesh add ${id} --on ${t.id} --address URL --lat N --lon N`,
              remoteCode: 'EDGE_SYNCMESH_NODE_NOT_FOUND',
            });
          }
          const n = { id, address: addressAt(t, known), lat: known.lat, lon: known.lon, subscribed: true, initial_sync: initialSync };
          const data = await meta(t, ADD, { n }, opts);
          return { result: 'added and subscribed', entry: data['addNode'] as RegistryEntry };
        }
      });
    },
  };
}

export const subscribeVerb = subscriptionVerb('subscribe');
export const unsubscribeVerb = subscriptionVerb('unsubscribe');
