/**
 * The demo's stateful part (faasd runtime): the example function miso-counter, deployed with the
 * upstream faas-cli to every node (its image pushed once to node-1's registry, copied from there
 * into the others' registries: deploy/deploy.ts pushImage), with the label com.syncmesh.miso=true so
 * each replica reaches its own node's MISO agent. Then adds on every node and a table of every
 * node's total until they agree, with the bytes the agents sent each other meanwhile.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { run } from '@syncmesh-edge/lab';
import { REPO_ROOT } from '../config.js';
import { MeshError } from '../errors.js';
import { nodesFromTopology, pushImage, type FunctionNode } from '../deploy/deploy.js';
import type { MeshHandle, Progress } from '../mesh.js';
import { FAASD_PATHS } from '../runtime/faasd.js';

const SDK_MAIN = join(REPO_ROOT, 'miso-agent', 'sdk', 'dist', 'src', 'index.js');
const COUNTER = 'miso-counter';

interface AgentPeers {
  peers: { node_id: string; bytes_sent: number }[];
}

/** Bytes every node's agent has sent its peers (from its status, through its own socket). */
export async function agentBytes(mesh: MeshHandle): Promise<number> {
  const sdk = (await import(pathToFileURL(SDK_MAIN).href)) as {
    MisoClient: new (socket: string, deadlineMs: number, transport: string) => { status(): Promise<AgentPeers>; close(): void };
  };
  let total = 0;
  for (const n of mesh.plan.nodes) {
    const c = new sdk.MisoClient(join(n.dir, 'faasd', 'var-lib-faasd', 'miso-agent', 'agent.sock'), 10_000, 'unary');
    try {
      total += (await c.status()).peers.reduce((s, p) => s + p.bytes_sent, 0);
    } finally {
      c.close();
    }
  }
  return total;
}

async function total(n: FunctionNode): Promise<number | string> {
  try {
    const res = await fetch(`${n.gatewayUrl}/function/${COUNTER}?object=demo`, { signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    return res.ok ? (JSON.parse(text) as { totalSum: number }).totalSum : `HTTP ${res.status}`;
  } catch (err) {
    return (err as Error).message.slice(0, 20);
  }
}

/** Returns the lines of the demo's counter table; throws when the totals do not agree in time. */
export async function counterDemo(mesh: MeshHandle, progress: Progress, rounds = 5, deadlineMs = 60_000): Promise<string[]> {
  const nodes = nodesFromTopology(mesh.topology);
  const faasCli = (await run(join(REPO_ROOT, 'hack', 'faas-cli.sh'), [], { timeoutMs: 900_000 })).stdout.trim();
  const version = (await run('cat', [join(FAASD_PATHS.images, `${COUNTER}.ref`)])).stdout.trim();
  const target = `${COUNTER}:${version}`;
  progress(`${COUNTER}: pushing the image to ${nodes[0]!.id}'s registry, then from there into the others'`);
  await pushImage([nodes[0]!], `oci-archive:${join(FAASD_PATHS.images, `${COUNTER}.oci.tar`)}`, target, { progress });
  await pushImage(nodes.slice(1), `${nodes[0]!.registry}/${target}`, target, { sources: [nodes[0]!], progress });
  for (const n of nodes) {
    const [user, ...rest] = n.basicAuth.split(':');
    const env = { ...process.env, HOME: join(mesh.plan.stateDir, 'faas-cli') };
    await run(faasCli, ['login', '--gateway', n.gatewayUrl, '--username', user!, '--password-stdin'], { input: rest.join(':'), env, timeoutMs: 60_000 });
    await run(faasCli, ['deploy', '--gateway', n.gatewayUrl, '--image', `${n.registry}/${target}`, '--name', COUNTER, '--label', 'com.syncmesh.miso=true'], {
      env,
      timeoutMs: 240_000,
    });
    progress(`${n.id}: faas-cli deploy --image ${n.registry}/${target} --name ${COUNTER} --label com.syncmesh.miso=true`);
  }
  const end = Date.now() + 180_000;
  for (const n of nodes) {
    while (typeof (await total(n)) !== 'number') {
      if (Date.now() > end) throw new MeshError('EDGE_MESH_FAASD_DEPLOY', `${COUNTER} did not answer on ${n.id} within 180 s`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const bytes0 = await agentBytes(mesh);
  const base = await total(nodes[0]!);
  let want = typeof base === 'number' ? base : 0;
  progress(`adding on every node: ${rounds} x (node-1 +1, node-2 +2, node-3 +3)`);
  for (let r = 0; r < rounds; r++) {
    await Promise.all(
      nodes.map(async (n, i) => {
        const res = await fetch(`${n.gatewayUrl}/function/${COUNTER}?object=demo`, {
          method: 'POST',
          body: String(i + 1),
          signal: AbortSignal.timeout(20_000),
        });
        await res.text();
        if (!res.ok) throw new MeshError('EDGE_MESH_REQUEST', `${COUNTER} on ${n.id} answered HTTP ${res.status}`);
        want += i + 1;
      }),
    );
  }
  const t0 = performance.now();
  const lines = [`${COUNTER} (faas-cli, label com.syncmesh.miso=true): every node's total after the adds, until they agree on ${want}`];
  lines.push(`${'ms'.padStart(6)}  ${nodes.map((n) => n.id.padStart(8)).join('  ')}`);
  for (;;) {
    const seen = await Promise.all(nodes.map(total));
    lines.push(`${(performance.now() - t0).toFixed(0).padStart(6)}  ${seen.map((v) => String(v).padStart(8)).join('  ')}`);
    if (seen.every((v) => v === want)) break;
    if (performance.now() - t0 > deadlineMs)
      throw new MeshError('EDGE_MESH_REQUEST', `the totals did not agree on ${want} within ${deadlineMs} ms: ${seen.join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  lines.push(`  agents' bytes to their peers during the adds and the convergence: ${(await agentBytes(mesh)) - bytes0}`);
  return lines;
}
