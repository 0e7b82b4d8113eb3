/**
 * `mesh fn ...` (make fn-deploy / fn-remove / fn-sync): users' functions on the mesh of the
 * topology file (default .mesh/topology.json: the local faasd mesh's; the Ansible and Terraform
 * topologies name each node's registry, and their credentials stay on the nodes).
 *
 *   fn deploy NAME --image REF [--nodes a,b] [--target repo:tag] [--env K=V]... [--label K=V]...
 *             [--annotation K=V]... [--secret S]... [--memory 128Mi] [--ready-path /_/health]
 *   fn remove NAME [--nodes a,b]
 *   fn sync NODE [--from a,b]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MeshError } from '../errors.js';
import { deployFunction, nodesFromTopology, removeFunction, syncNode, type NodeOutcome } from './deploy.js';
import type { Topology } from '../plan/topology.js';

function pairs(list: string[] | undefined, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of list ?? []) {
    const i = p.indexOf('=');
    if (i <= 0) throw new MeshError('EDGE_MESH_FN_BAD_INPUT', `--${what} ${p}: KEY=VALUE`);
    out[p.slice(0, i)] = p.slice(i + 1);
  }
  return out;
}

function ids(v: string | undefined): string[] | undefined {
  return v
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function table(outcomes: NodeOutcome[]): string {
  return outcomes
    .map(
      (o) => `${o.node.padEnd(10)} ${o.action.padEnd(8)} ${o.image ?? ''}${o.readyMs === undefined ? '' : `  ready after ${(o.readyMs / 1000).toFixed(1)} s`}`,
    )
    .join('\n');
}

export async function runFn(stateRoot: string, argv: string[], progress: (m: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      topology: { type: 'string' },
      image: { type: 'string' },
      nodes: { type: 'string' },
      from: { type: 'string' },
      target: { type: 'string' },
      env: { type: 'string', multiple: true },
      label: { type: 'string', multiple: true },
      annotation: { type: 'string', multiple: true },
      secret: { type: 'string', multiple: true },
      memory: { type: 'string' },
      'ready-path': { type: 'string' },
    },
  });
  const [sub, name] = positionals;
  const file = values.topology ?? join(stateRoot, 'topology.json');
  let topology: Topology;
  try {
    topology = JSON.parse(readFileSync(file, 'utf8')) as Topology;
  } catch (err) {
    throw new MeshError(
      'EDGE_MESH_NOT_UP',
      `cannot read the topology ${file} (${(err as Error).message}): start a mesh (make mesh-up RUNTIME=faasd) or pass --topology`,
    );
  }
  if (!name)
    throw new MeshError('EDGE_MESH_FN_BAD_INPUT', 'usage: mesh fn deploy NAME --image REF [--nodes a,b] | fn remove NAME [--nodes a,b] | fn sync NODE');
  switch (sub) {
    case 'deploy': {
      if (!values.image) throw new MeshError('EDGE_MESH_FN_BAD_INPUT', 'fn deploy needs --image (e.g. 10.0.0.11:5000/hello:1, oci-archive:hello.tar)');
      const out = await deployFunction(
        nodesFromTopology(topology, ids(values.nodes)),
        {
          name,
          image: values.image,
          ...(values.target ? { target: values.target } : {}),
          envVars: pairs(values.env, 'env'),
          labels: pairs(values.label, 'label'),
          annotations: pairs(values.annotation, 'annotation'),
          secrets: values.secret ?? [],
          ...(values.memory ? { limits: { memory: values.memory } } : {}),
        },
        { progress, ...(values['ready-path'] ? { readyPath: values['ready-path'] } : {}) },
      );
      process.stdout.write(`${table(out)}\n`);
      return 0;
    }
    case 'remove':
      process.stdout.write(`${table(await removeFunction(nodesFromTopology(topology, ids(values.nodes)), name, { progress }))}\n`);
      return 0;
    case 'sync': {
      const [target] = nodesFromTopology(topology, [name]);
      const from = nodesFromTopology(topology, ids(values.from) ?? topology.nodes.map((n) => n.id).filter((id) => id !== name));
      process.stdout.write(`${table(await syncNode(target!, from, { progress }))}\n`);
      return 0;
    }
    default:
      throw new MeshError('EDGE_MESH_FN_BAD_INPUT', `unknown fn command '${sub}': deploy, remove or sync`);
  }
}
