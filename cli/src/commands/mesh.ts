/**
 * `syncmesh mesh`: the mesh description as the CLI reads it (checked), its node ids (--ids, for
 * scripts and the shell completion) or its format as JSON Schema (--schema). Contacts no node.
 */
import { EXIT } from '@syncmesh-edge/log/exit';
import type { VerbSpec } from '../args.js';
import type { Context, Verb } from '../context.js';
import { meshJsonSchema } from '../mesh-file.js';
import { table, type VerbOutcome } from '../output.js';

const spec: VerbSpec = {
  name: 'mesh',
  summary: 'The mesh description as read (checked): its nodes and where each is reached; contacts no node',
  details: 'The format: docs/reference/mesh-description.md. --schema prints it as JSON Schema (and reads no file).',
  options: {
    ids: { type: 'boolean', description: 'only the node ids, one per line' },
    schema: { type: 'boolean', description: 'the format of a mesh description, as JSON Schema' },
  },
  positionals: [],
  examples: ['syncmesh mesh', 'syncmesh mesh --mesh .mesh/smt3/topology.json --json', 'syncmesh mesh --schema > mesh.schema.json'],
};

export const meshVerb: Verb = {
  spec,
  async run(ctx: Context, args): Promise<VerbOutcome> {
    if (args.values['schema']) {
      const schema = meshJsonSchema();
      return { code: EXIT.OK, result: schema, text: JSON.stringify(schema, null, 2) };
    }
    const mesh = ctx.mesh();
    if (args.values['ids']) return { code: EXIT.OK, result: mesh.nodes.map((n) => n.id), text: mesh.nodes.map((n) => n.id).join('\n') };
    const rows = mesh.nodes.map((n) => [
      n.id,
      n.function_url,
      n.lat === null || n.lon === null ? '-' : `${n.lat}, ${n.lon}`,
      n.gateway_url ?? '-',
      n.listener_url ?? '-',
      n.agent_address ?? '-',
    ]);
    const text = [
      `mesh ${mesh.mesh} (${mesh.runtime ?? 'process'} runtime, ${mesh.isolation}) from ${mesh.path}${mesh.created_at ? `, written ${mesh.created_at}` : ''}`,
      `secret_file ${mesh.secret_file}; write_key_file ${mesh.write_key_file}${mesh.logs_dir ? `; logs ${mesh.logs_dir}` : ''}`,
      '',
      table(['NODE', 'FUNCTION', 'LAT, LON', 'GATEWAY', 'LISTENER', 'AGENT'], rows),
    ].join('\n');
    return { code: EXIT.OK, result: mesh, text };
  },
};
