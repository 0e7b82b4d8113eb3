/**
 * The CLI's own behaviour without a mesh: help, usage errors, a bad mesh file, unreachable nodes
 * (a description whose nodes are ports nothing listens on), the completion script in real bash.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from '@syncmesh-edge/log/exit';
import { runCli } from './main.js';
import { VERBS } from './verbs.js';

const dir = mkdtempSync(join(tmpdir(), 'syncmesh-cli-main-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function run(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { SYNCMESH_MESH: join(dir, 'none.json'), ...env }, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

/** A mesh description whose nodes are `nodes` (each: id, function URL, more fields). */
function meshOf(mesh: string, nodes: Array<{ id: string; url: string; [k: string]: unknown }>): Record<string, unknown> {
  return {
    mesh,
    isolation: 'loopback',
    subnet: null,
    host_address: '127.0.0.1',
    latency: 'none',
    forward_mode: 'parallel',
    toxiproxy_api: null,
    secret_file: join(dir, 'secret'),
    write_key_file: join(dir, 'write-key'),
    created_at: new Date().toISOString(),
    nodes: nodes.map(({ id, url, ...more }) => ({
      id,
      function_url: url,
      mongodb_uri: null,
      agent_address: null,
      lat: null,
      lon: null,
      namespace: null,
      address: '127.0.0.1',
      host_interface: null,
      peers: {},
      ...more,
    })),
  };
}

async function deadPort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

test('cli - every verb has --help; the main help lists them; an unknown verb or option is a usage error (exit 64), a bad environment a configuration error (78)', async () => {
  const main = await run(['--help']);
  assert.equal(main.code, EXIT.OK);
  for (const v of VERBS) {
    assert.match(main.out, new RegExp(`\\n  ${v.spec.name} `));
    const h = await run([v.spec.name, '--help']);
    assert.equal(h.code, EXIT.OK, v.spec.name);
    assert.match(h.out, new RegExp(`^usage: syncmesh ${v.spec.name}`));
    assert.match(h.out, /--json/);
  }
  const unknown = await run(['frobnicate', '--json']);
  assert.equal(unknown.code, EXIT.USAGE);
  assert.equal(JSON.parse(unknown.out).error.code, 'EDGE_CLI_USAGE');
  const badOption = await run(['status', '--colour']);
  assert.equal(badOption.code, EXIT.USAGE);
  assert.match(badOption.err, /EDGE_CLI_USAGE: syncmesh status: Unknown option '--colour'/);
  assert.match(badOption.err, /what to do: syncmesh status --help/);
  const badKind = await run(['query', 'count', '--json']);
  assert.equal(badKind.code, EXIT.USAGE);
  assert.match(JSON.parse(badKind.out).error.message, /KIND must be one of collect, aggregate, stats/);
  const badTimeout = await run(['status', '--timeout-ms', 'soon']);
  assert.equal(badTimeout.code, EXIT.USAGE);
  assert.match(badTimeout.err, /--timeout-ms must be a whole number from 100 to 600000/);
  const badEnv = await run(['status'], { SYNCMESH_TIMEOUT_MS: '-1' });
  assert.equal(badEnv.code, EXIT.CONFIG);
  assert.match(badEnv.err, /EDGE_CLI_CONFIG: invalid environment: SYNCMESH_TIMEOUT_MS/);
});

test('cli - a missing or bad mesh file: exit 78 (configuration), the file and what to do, as JSON with --json', async () => {
  const missing = await run(['status', '--json']);
  assert.equal(missing.code, EXIT.CONFIG);
  const e = JSON.parse(missing.out).error;
  assert.equal(e.code, 'EDGE_CLI_MESH_FILE');
  assert.match(e.message, /none\.json: no such file/);
  assert.match(e.hint, /make mesh-up/);
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ mesh: 'x', nodes: [] }));
  const bad = await run(['nodes', '--mesh', join(dir, 'bad.json')]);
  assert.equal(bad.code, EXIT.CONFIG);
  assert.match(bad.err, /EDGE_CLI_MESH_FILE: the mesh description .*bad\.json is not valid/);
});

test('cli - status of nodes nobody answers for: exit 1 (failed), one line per node, within the deadline', async () => {
  const ports = [await deadPort(), await deadPort()];
  const mesh = meshOf(
    'dead',
    ports.map((p, i) => ({
      id: `node-${i + 1}`,
      url: `http://127.0.0.1:${p}/function/syncmesh-fn`,
      agent_address: `127.0.0.1:${p}`,
      listener_url: `http://127.0.0.1:${p}`,
    })),
  );
  writeFileSync(join(dir, 'dead.json'), JSON.stringify(mesh));
  const t0 = performance.now();
  const r = await run(['status', '--mesh', join(dir, 'dead.json'), '--json', '--timeout-ms', '2000']);
  assert.ok(performance.now() - t0 < 10_000, 'refused connections answer at once');
  assert.equal(r.code, EXIT.FAILED);
  const status = JSON.parse(r.out);
  assert.deepEqual(
    status.nodes.map((n: { id: string; reachable: boolean }) => [n.id, n.reachable]),
    [
      ['node-1', false],
      ['node-2', false],
    ],
  );
  assert.equal(status.nodes[0].services.function.state, 'down');
  assert.equal(status.nodes[0].disk_free_bytes, null);
  const lines = r.err.trim().split('\n');
  assert.equal(lines.length, 2);
  assert.match(
    lines[0]!,
    /^syncmesh: node-1: unreachable \(EDGE_CLI_UNREACHABLE\): function: GET http:\/\/127\.0\.0\.1:\d+\/function\/syncmesh-fn\/healthz: connection refused/,
  );
  // a query to a dead node: exit 1, the URL and why
  const q = await run(['query', 'stats', '--mesh', join(dir, 'dead.json'), '--json']);
  assert.equal(q.code, EXIT.FAILED);
  assert.equal(JSON.parse(q.out).error.code, 'EDGE_CLI_UNREACHABLE');
  // a registry change without a readable secret: exit 78 (configuration) before anything is sent
  const add = await run([
    'add',
    'node-2',
    '--on',
    'node-1',
    '--address',
    'http://10.0.0.2:8080/',
    '--lat',
    '1',
    '--lon',
    '2',
    '--mesh',
    join(dir, 'dead.json'),
    '--json',
  ]);
  assert.equal(add.code, EXIT.CONFIG);
  assert.equal(JSON.parse(add.out).error.code, 'EDGE_CLI_CREDENTIALS');
});

test('cli - the process exits with the shared table: 0 done, 64 usage, 78 configuration, 1 failed', async () => {
  const dead = await deadPort();
  writeFileSync(join(dir, 'exit.json'), JSON.stringify(meshOf('exit', [{ id: 'node-1', url: `http://127.0.0.1:${dead}/function/syncmesh-fn` }])));
  const exitOf = (...argv: string[]) =>
    spawnSync(process.execPath, [join(import.meta.dirname, 'main.js'), ...argv], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, SYNCMESH_MESH: join(dir, 'none.json') },
    });
  const cases: [string[], number, RegExp][] = [
    [['--version'], 0, /^$/],
    [[], 64, /^$/],
    [['frobnicate'], 64, /EDGE_CLI_USAGE/],
    [['query', 'stats', '--node', 'nine', '--mesh', join(dir, 'exit.json')], 64, /EDGE_CLI_UNKNOWN_NODE/],
    [['status'], 78, /EDGE_CLI_MESH_FILE/],
    [['query', 'stats', '--mesh', join(dir, 'exit.json')], 1, /EDGE_CLI_UNREACHABLE/],
  ];
  for (const [argv, status, stderr] of cases) {
    const r = exitOf(...argv);
    assert.equal(r.status, status, `syncmesh ${argv.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, stderr);
  }
  assert.deepEqual([EXIT.OK, EXIT.FAILED, EXIT.USAGE, EXIT.CONFIG], [0, 1, 64, 78], "lib/log's table, as documented");
});

test('cli - a node that drops every packet costs the deadline, not more: the process exits right after (root: a private network namespace)', {
  skip: process.getuid?.() !== 0 ? 'needs root (unshare -n)' : false,
}, () => {
  // 10.213.9.2 is on a veth of a namespace of this test alone, with a static neighbour entry: SYNs
  // leave and nobody answers, as with a node cut off (a pending connect outlives the request)
  const mesh = meshOf('hole', [
    { id: 'node-1', url: 'http://10.213.9.2:8080/function/syncmesh-fn', agent_address: '10.213.9.2:7070', listener_url: 'http://10.213.9.2:8091' },
  ]);
  writeFileSync(join(dir, 'hole.json'), JSON.stringify(mesh));
  const script = [
    'ip link set lo up',
    'ip link add h9a type veth peer name h9b',
    'ip addr add 10.213.9.1/24 dev h9a',
    'ip link set h9a up',
    'ip link set h9b up',
    'ip neigh add 10.213.9.2 lladdr 02:00:00:00:00:02 dev h9a',
    `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(import.meta.dirname, 'main.js'))} status --mesh ${JSON.stringify(join(dir, 'hole.json'))} --timeout-ms 2000 --json`,
  ].join(' && ');
  const t0 = performance.now();
  const r = spawnSync('unshare', ['-n', 'sh', '-c', script], { encoding: 'utf8', timeout: 30_000 });
  const took = performance.now() - t0;
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /node-1: unreachable \(EDGE_CLI_UNREACHABLE\): function: GET \S+: no answer within 2000 ms/);
  assert.ok(took < 7_000, `the process took ${Math.round(took)} ms for a 2000 ms deadline (a pending connect kept it up?)`);
});

test('cli - the bash completion script completes verbs, options, kinds and node ids (real bash)', async () => {
  const script = (await run(['completion', 'bash'])).out;
  writeFileSync(join(dir, 'completion.bash'), script);
  writeFileSync(
    join(dir, 'ids.json'),
    JSON.stringify(
      meshOf(
        'ids',
        ['alpha', 'beta'].map((id) => ({ id, url: 'http://127.0.0.1:1/' })),
      ),
    ),
  );
  const launcher = join(dir, 'syncmesh');
  writeFileSync(launcher, `#!/usr/bin/env bash\nexec node ${JSON.stringify(join(import.meta.dirname, 'main.js'))} "$@"\n`, { mode: 0o755 });
  const complete = (words: string[]) =>
    execFileSync(
      'bash',
      [
        '-c',
        `source ${join(dir, 'completion.bash')}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _syncmesh; printf '%s\\n' "\${COMPREPLY[@]}"`,
      ],
      { encoding: 'utf8' },
    )
      .trim()
      .split('\n');
  assert.deepEqual(complete([launcher, 'su']), ['subscribe']);
  assert.deepEqual(complete([launcher, 'query', '']).sort(), ['aggregate', 'collect', 'stats']);
  assert.ok(complete([launcher, 'load', 'x.csv', '--f']).includes('--format'));
  assert.deepEqual(complete([launcher, 'load', 'x.csv', '--format', '']).sort(), ['csv', 'jsonl']);
  assert.deepEqual(complete([launcher, 'status', '--mesh', join(dir, 'ids.json'), '']).sort(), ['alpha', 'beta']);
  assert.deepEqual(complete([launcher, 'logs', '--mesh', join(dir, 'ids.json'), '--node', 'b']), ['beta']);
  const zsh = (await run(['completion', 'zsh'])).out;
  assert.match(zsh, /bashcompinit/);
  execFileSync('bash', ['-n', join(dir, 'completion.bash')]);
});
