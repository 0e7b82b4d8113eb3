#!/usr/bin/env node
/**
 * mesh <command>: the Makefile's mesh-* targets call this.
 *
 *   up                       start a mesh (MESH_NODES, MESH_LATENCY, MESH_DATA, ... from env)
 *   down                     remove it (idempotent; also after a crash)
 *   status [--json]          processes, readiness, memory per node and per process
 *   cut <node> | restore <node>
 *   capture -- <command...>  bytes per link and direction while the command runs (JSON)
 *   demo                     3 nodes, a collect and an aggregate query, a table, teardown
 *   fn deploy|remove|sync    users' functions on a faasd mesh (deploy/cli.ts: every node's registry and gateway)
 *
 * The benchmarks (make bench-mesh, bench-replication, bench-function RUNTIME=faasd) are programs
 * of their own in ../bench.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clientNamespace, startMeshCapture, type CaptureTopology, type MeshTraffic } from './network/capture.js';
import { loadConfig } from './config.js';
import { inNetns, removeNamespace, type ExtraNamespace } from '@syncmesh-edge/lab';
import { interruptible, progress, runMain } from './command.js';
import { MeshError } from './errors.js';
import { cut, down, restore, status, up } from './mesh.js';
import { requireState } from './plan/state.js';
import { buildTopology } from './plan/topology.js';
import { runDemo } from './demo/demo.js';
import { runFn } from './deploy/cli.js';

const MB = 1024 * 1024;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const cfg = loadConfig();
  switch (command) {
    case 'up':
      return interruptible('interrupted: stopping the start and removing what was created', async (signal) => {
        const mesh = await up(cfg, { progress, signal });
        for (const n of mesh.topology.nodes) progress(`  ${n.id}  ${n.function_url}  ${n.mongodb_uri}${n.namespace ? `  netns ${n.namespace}` : ''}`);
        return 0;
      });
    case 'down': {
      // finish the teardown even if Ctrl-C is pressed again
      process.on('SIGINT', () => progress('teardown in progress; please wait'));
      const r = await down(cfg.stateRoot, cfg.name, progress);
      progress(`mesh '${cfg.name}' down (${r.stopped} processes stopped, ${r.netns} namespaces and ${r.links} interfaces removed)`);
      return 0;
    }
    case 'status': {
      const s = await status(cfg.stateRoot, cfg.name);
      if (rest.includes('--json')) {
        process.stdout.write(`${JSON.stringify(s, null, 2)}\n`);
        return 0;
      }
      const out: string[] = [];
      out.push(
        `mesh ${s.mesh}: ${s.phase}, ${s.isolation}, latency ${s.latency}, ${s.nodes.length} nodes, total PSS ${(s.totalPssBytes / MB).toFixed(0)} MB (RSS ${(s.totalRssBytes / MB).toFixed(0)} MB; RSS counts shared code once per process)`,
      );
      if (s.toxiproxy)
        out.push(`toxiproxy pid ${s.toxiproxy.pid} ${s.toxiproxy.alive ? 'running' : 'DEAD'} ${((s.toxiproxy.rssBytes ?? 0) / MB).toFixed(0)} MB`);
      out.push(
        `${'node'.padEnd(8)} ${'address'.padEnd(15)} ${'ready'.padEnd(5)} ${'cut'.padEnd(4)} ${'PSS MB'.padStart(7)} ${'RSS MB'.padStart(7)}  processes (role pid PSS/RSS MB)`,
      );
      for (const n of s.nodes) {
        const procs = n.processes
          .map((p) => `${p.role} ${p.pid} ${p.alive ? `${((p.pssBytes ?? 0) / MB).toFixed(0)}/${((p.rssBytes ?? 0) / MB).toFixed(0)}` : 'DEAD'}`)
          .join(', ');
        out.push(
          `${n.id.padEnd(8)} ${n.addr.padEnd(15)} ${(n.ready ? 'yes' : 'NO').padEnd(5)} ${(n.cut ? 'CUT' : '-').padEnd(4)} ${(n.pssBytes / MB).toFixed(0).padStart(7)} ${(n.rssBytes / MB).toFixed(0).padStart(7)}  ${procs}`,
        );
      }
      process.stdout.write(`${out.join('\n')}\n`);
      return 0;
    }
    case 'cut':
    case 'restore': {
      const ref = rest[0];
      if (!ref) throw new MeshError('EDGE_MESH_UNKNOWN_NODE', `usage: mesh ${command} <node>, e.g. node-2 (make mesh-${command} NODE=2)`);
      const node = command === 'cut' ? await cut(cfg.stateRoot, cfg.name, ref) : await restore(cfg.stateRoot, cfg.name, ref);
      progress(`${node.id} ${command === 'cut' ? 'cut off (connections to and from it hang)' : 'restored'}`);
      return 0;
    }
    case 'capture': {
      // the Makefile passes CMD through the environment, so any quoting in it survives
      const fromEnv = process.env['MESH_CAPTURE_CMD']?.trim();
      const cmd = rest[0] === '--' ? rest.slice(1) : rest.length > 0 ? rest : fromEnv ? [fromEnv] : [];
      if (cmd.length === 0) throw new MeshError('EDGE_MESH_COMMAND_FAILED', 'usage: mesh capture -- <command...> (make mesh-capture CMD="...")');
      const bridge = process.env['MESH_CAPTURE_IFACE']?.trim();
      const stamp = Date.now();
      let topology: CaptureTopology;
      let client: ExtraNamespace | undefined;
      let dir: string;
      if (bridge) {
        // VMs on a bridge (terraform): no mesh state here, only the topology it wrote
        topology = JSON.parse(readFileSync(join(cfg.stateRoot, cfg.name, 'topology.json'), 'utf8')) as CaptureTopology;
        dir = join(cfg.stateRoot, cfg.name, `capture-${stamp}`);
      } else {
        const state = requireState(cfg.stateRoot, cfg.name);
        topology = buildTopology(state);
        dir = join(state.plan.stateDir, `capture-${stamp}`);
        if (state.plan.isolation === 'netns') client = await clientNamespace(cfg.name, state.plan.subnet!, state.plan.bridge!);
      }
      mkdirSync(dir, { recursive: true });
      let code: number;
      let traffic: MeshTraffic;
      try {
        const capture = await startMeshCapture(topology, { dir, ...(client ? { client } : {}), ...(bridge ? { bridge } : {}) });
        progress(
          `capturing on ${bridge ?? `${topology.nodes.length} node links and the client's`} while: ${cmd.join(' ')}${client ? ` (run in the client namespace ${client.netns}, ${client.addr})` : ''}`,
        );
        const argv = client ? inNetns(client.netns, cmd.length === 1 ? ['sh', '-c', cmd[0]!] : cmd) : cmd;
        code = await new Promise<number>((resolveCode) => {
          const child = spawn(argv[0]!, argv.slice(1), { stdio: 'inherit', shell: !client && cmd.length === 1 });
          child.once('exit', (c, sig) => resolveCode(c ?? (sig ? 128 : 1)));
          child.once('error', () => resolveCode(127));
        });
        traffic = await capture.stop();
      } finally {
        if (client) await removeNamespace(client);
      }
      const result = { ...traffic, command: cmd.join(' '), exit_code: code };
      const file = join(dir, 'capture.json');
      writeFileSync(file, JSON.stringify(result, null, 2));
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      progress(`capture written to ${file}`);
      return code;
    }
    case 'demo':
      return runDemo(cfg, progress);
    case 'fn':
      return runFn(cfg.stateRoot, rest, progress);
    default:
      process.stderr.write('usage: mesh up|down|status [--json]|cut <node>|restore <node>|capture -- <cmd>|demo|fn deploy|remove|sync\n');
      return 2;
  }
}

runMain(main);
