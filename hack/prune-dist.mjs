#!/usr/bin/env node
// The first step of `make build`: removes compiled files whose TypeScript source is gone.
// `tsc -b` never deletes the output of a source file that was moved or deleted, so in a checkout
// that built before a pull, `node --test dist/...` would still run an old test file (and fail on
// imports that no longer exist). Every workspace that the root tsconfig.json references compiles
// with rootDir "." and outDir "dist" (checked here): dist/<path>.js, .d.ts and their maps belong
// to <path>.ts (or .tsx, .mts). Other files in dist/ (copied JSON) are left alone.
//
//   node hack/prune-dist.mjs      prints each removed file; exit 0 (1 when a workspace's layout differs)
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUTPUTS = [/\.d\.ts\.map$/, /\.d\.ts$/, /\.js\.map$/, /\.js$/];
const SOURCES = ['.ts', '.tsx', '.mts'];

function* files(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p);
    else yield p;
  }
}

let removed = 0;
const projects = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')).references.map((r) => r.path);
for (const project of projects) {
  const dir = join(ROOT, project);
  const opts = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')).compilerOptions ?? {};
  if (opts.rootDir !== '.' || opts.outDir !== 'dist') {
    console.error(`prune-dist: ${project}/tsconfig.json compiles with rootDir ${opts.rootDir} and outDir ${opts.outDir}; this script expects "." and "dist"`);
    process.exit(1);
  }
  const dist = join(dir, 'dist');
  if (!existsSync(dist)) continue;
  for (const out of files(dist)) {
    const ext = OUTPUTS.find((re) => re.test(out));
    if (!ext) continue;
    const base = join(dir, relative(dist, out).replace(ext, ''));
    if (SOURCES.some((s) => existsSync(base + s))) continue;
    rmSync(out);
    removed++;
    console.log(`prune-dist: removed ${relative(ROOT, out)} (its source is gone)`);
  }
}
if (removed > 0) console.log(`prune-dist: ${removed} stale compiled file(s) removed`);
