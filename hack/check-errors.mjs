#!/usr/bin/env node
// The errors-table check of `make verify`: every EDGE_* code a component defines or raises has
// exactly one row in docs/errors.md with a "How to solve" cell, and every row names a code that
// still exists in the code. Codes are found as whole string literals ('EDGE_SVC_THING') in the
// TypeScript sources of every npm workspace (src/, bench/, scripts/; tests excluded) and the Python
// sources of PYTHON_DIRS, so a code
// that is only declared in a type union counts as well as one passed to an error constructor.
// functions/syncmesh/src/errors.test.ts additionally checks the HTTP status of its rows.
//
//   node hack/check-errors.mjs          exit 0 when the table and the code agree, 1 otherwise
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOC = 'docs/errors.md';
const SOURCE_DIRS = ['src', 'bench', 'scripts'];
// components that are not npm workspaces: their Python sources (tests excluded)
const PYTHON_DIRS = ['images/appliance/node', 'images/appliance/node/boot'];
const CODE_LITERAL = /['"`](EDGE_[A-Z0-9]+(?:_[A-Z0-9]+)+)['"`]/g;
const MIN_FIX_CHARS = 10;

function tsFiles(dir) {
  let out = [];
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out; // the workspace has no such folder
  }
  for (const name of entries) {
    if (name === 'node_modules' || name === 'dist') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(tsFiles(p));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** code -> first file that names it */
function codesInSources() {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const codes = new Map();
  for (const ws of pkg.workspaces) {
    for (const sub of SOURCE_DIRS) {
      for (const file of tsFiles(join(ROOT, ws, sub))) {
        for (const m of readFileSync(file, 'utf8').matchAll(CODE_LITERAL)) {
          if (!codes.has(m[1])) codes.set(m[1], relative(ROOT, file));
        }
      }
    }
  }
  for (const dir of PYTHON_DIRS) {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      if (!name.endsWith('.py') || name.startsWith('test_')) continue;
      for (const m of readFileSync(join(ROOT, dir, name), 'utf8').matchAll(CODE_LITERAL)) {
        if (!codes.has(m[1])) codes.set(m[1], join(dir, name));
      }
    }
  }
  return codes;
}

/** code -> the cells of its row(s) */
function rowsInDoc() {
  const rows = new Map();
  const lines = readFileSync(join(ROOT, DOC), 'utf8').split('\n');
  lines.forEach((line, i) => {
    const m = /^\| `(EDGE_[A-Z0-9_]+)` \|/.exec(line);
    if (!m) return;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const list = rows.get(m[1]) ?? [];
    list.push({ line: i + 1, cells });
    rows.set(m[1], list);
  });
  return rows;
}

const codes = codesInSources();
const rows = rowsInDoc();
const problems = [];

for (const [code, file] of [...codes].sort()) {
  if (!rows.has(code)) problems.push(`${code} (${file}) has no row in ${DOC}`);
}
for (const [code, list] of [...rows].sort()) {
  if (list.length > 1) problems.push(`${code} has ${list.length} rows in ${DOC} (lines ${list.map((r) => r.line).join(', ')})`);
  const fix = list[0].cells.at(-1) ?? '';
  if (fix.length < MIN_FIX_CHARS) problems.push(`${DOC}:${list[0].line}: ${code} has no "How to solve" cell`);
  if (!codes.has(code)) problems.push(`${DOC}:${list[0].line}: ${code} is documented but no source defines it (retired? remove the row)`);
}

if (problems.length > 0) {
  console.error(`errors table: ${problems.length} problem(s):`);
  for (const p of problems) console.error(`  - ${p}`);
  process.exit(1);
}
console.log(`errors table: ${codes.size} codes, each with one row and a fix in ${DOC}`);
