#!/usr/bin/env node
/**
 * Bundles one service's runtime into a single ES module with esbuild, from the compiled
 * `dist/` of its workspace (run `npx tsc -b` first), and collects the licences of every npm
 * package that went into it.
 *
 *   node images/build/bundle.mjs <name> <outdir>
 *
 * Writes <outdir>/main.mjs, <outdir>/meta.json (esbuild's metafile), <outdir>/licenses/<pkg>/…
 * (each bundled package's LICENSE files and package.json "license") and
 * <outdir>/packages.txt ("name version license", one per line). Fails when the bundle would
 * contain test code, scripts or the MongoDB test server (function images must not).
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Entry point (compiled JS) of each image's service, relative to the repository root. */
const ENTRIES = {
  'syncmesh-fn': 'functions/syncmesh/dist/src/main.js',
  listener: 'listeners/dist/src/main.js',
  'miso-agent': 'miso-agent/dist/src/main.js',
  'miso-counter': 'functions/miso-counter/dist/src/main.js',
  'fn-node20': 'miso-agent/sdk/dist/src/run-handler.js',
  'async-worker': 'coordination/dist/src/main.js',
};

/**
 * Optional dependencies of the MongoDB driver (compression, Kerberos, AWS/GCP auth, SOCKS,
 * client-side encryption). The driver loads each with require() inside try/catch and works
 * without it; they are not installed, so they stay outside the bundle.
 */
const EXTERNAL = ['kerberos', 'snappy', '@mongodb-js/zstd', 'mongodb-client-encryption', '@aws-sdk/credential-providers', 'gcp-metadata', 'socks', 'aws4'];

/** Inputs that must never reach an image: tests, test harnesses, scripts, the test server. */
const FORBIDDEN = [
  /(^|\/)test\//,
  /\.test\.js$/,
  /(^|\/)testing\//,
  /(^|\/)scripts\//,
  /(^|\/)bench\//,
  /mongo-test-server/,
  /mongo-java-server/,
  /fast-check/,
];

/** ES module output still meets CommonJS packages that call require(): give them one. */
const BANNER = ["import { createRequire as __smiCreateRequire } from 'node:module';", 'const require = __smiCreateRequire(import.meta.url);'].join('\n');

function fail(message) {
  process.stderr.write(`bundle: ${message}\n`);
  process.exit(1);
}

/** The node_modules package an input path belongs to, e.g. "@grpc/grpc-js", or undefined. */
function packageOf(input) {
  const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  return m ? { name: m[1], dir: input.slice(0, m.index + m[0].length - 1).replace(/^\//, '') } : undefined;
}

async function main() {
  const [name, outArg] = process.argv.slice(2);
  const entry = ENTRIES[name];
  if (!entry || !outArg) fail(`usage: bundle.mjs <${Object.keys(ENTRIES).join('|')}> <outdir>`);
  const out = resolve(outArg);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  const result = await build({
    absWorkingDir: repo,
    entryPoints: [entry],
    outfile: join(out, 'main.mjs'),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    banner: { js: BANNER },
    external: EXTERNAL,
    // The licence texts travel as files under /licenses; keep the bundle lean but readable.
    legalComments: 'none',
    minifySyntax: true,
    minifyWhitespace: true,
    keepNames: true,
    sourcemap: false,
    metafile: true,
    logLevel: 'warning',
  });

  const inputs = Object.keys(result.metafile.inputs);
  const bad = inputs.filter((i) => FORBIDDEN.some((re) => re.test(i)));
  if (bad.length > 0) fail(`${name}: the bundle would contain test/script/test-server code:\n  ${bad.join('\n  ')}`);
  writeFileSync(join(out, 'meta.json'), `${JSON.stringify(result.metafile, null, 1)}\n`);

  // Licences of every bundled npm package (workspace packages are ours: MIT, the repo's LICENSE).
  const packages = new Map();
  for (const input of inputs) {
    const p = packageOf(input);
    if (p && !packages.has(p.name)) packages.set(p.name, p.dir);
  }
  const lines = [];
  for (const [pkg, dir] of [...packages].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const abs = join(repo, dir);
    const meta = JSON.parse(readFileSync(join(abs, 'package.json'), 'utf8'));
    const licence = typeof meta.license === 'string' ? meta.license : JSON.stringify(meta.license ?? 'UNKNOWN');
    const files = readdirSync(abs).filter((f) => /^(licen[cs]e|copying|notice)/i.test(f));
    if (files.length === 0) fail(`${name}: ${pkg} (${relative(repo, abs)}) has no LICENSE file to ship`);
    mkdirSync(join(out, 'licenses', pkg), { recursive: true });
    for (const f of files) copyFileSync(join(abs, f), join(out, 'licenses', pkg, f));
    lines.push(`${pkg} ${meta.version} ${licence}`);
  }
  writeFileSync(join(out, 'packages.txt'), `${lines.join('\n')}\n`);
}

main().catch((err) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err)));
