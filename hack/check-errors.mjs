#!/usr/bin/env node
// The errors-table check of `make verify`: every EDGE_* code a component defines or raises has
// exactly one row in docs/errors.md with a "How to solve" cell, every row names a code that
// still exists in the code, and no other Markdown file keeps its own table of codes (a README
// links to docs/errors.md instead: copies drift). Codes are found as whole string literals
// ('EDGE_SVC_THING') in every source file of the tree (TypeScript, JavaScript, Python, shell;
// tests, build output and dependencies excluded), so a code that is only declared in a type
// union counts as well as one passed to an error constructor.
// functions/syncmesh/src/errors.test.ts additionally checks the HTTP status of its rows.
//
//   node hack/check-errors.mjs          exit 0 when the table and the code agree, 1 otherwise
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOC = 'docs/errors.md';
const SELF = 'hack/check-errors.mjs';
/** Folders never searched: dependencies, build output, caches, vendored sources, tests. */
const SKIP_DIRS = new Set([
  'node_modules',
  'dist',
  '.git',
  '.cache',
  '.venv',
  'venv',
  '__pycache__',
  '.terraform',
  '.mesh',
  'site',
  'vendor',
  'test',
  'tests',
  'testdata',
  'fixtures',
]);
const SOURCE = /\.(ts|mts|mjs|js|cjs|py|sh)$/;
const TEST_FILE = /(\.test\.[cm]?[jt]s|\.d\.ts|^test_.*\.py|_test\.py)$/;
const CODE_LITERAL = /['"`](EDGE_[A-Z0-9]+(?:_[A-Z0-9]+)+)['"`]/g;
/** A table row that starts with a code: `| \`EDGE_...\` |` (also "`EDGE_X` (from ...)"). */
const CODE_ROW = /^\| `(EDGE_[A-Z0-9_]+)`/;
const MIN_FIX_CHARS = 10;

/** Every file under `dir` (relative to ROOT) whose name matches `keep`, skipping SKIP_DIRS. */
function walk(dir, keep, out = []) {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) walk(rel, keep, out);
    } else if (entry.isFile() && keep(entry.name, rel)) out.push(rel);
  }
  return out;
}

/** code -> first file that names it */
function codesInSources() {
  const codes = new Map();
  const files = walk('', (name, rel) => SOURCE.test(name) && !TEST_FILE.test(name) && rel !== SELF).sort();
  for (const file of files) {
    for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(CODE_LITERAL)) {
      if (!codes.has(m[1])) codes.set(m[1], file);
    }
  }
  return codes;
}

/** Rows of a code table in Markdown files other than DOC: "file:line CODE". */
function tablesElsewhere() {
  const found = [];
  for (const file of walk('', (name, rel) => name.endsWith('.md') && rel !== DOC).sort()) {
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const m = CODE_ROW.exec(line);
        if (m) found.push(`${file}:${i + 1} ${m[1]}`);
      });
  }
  return found;
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

for (const row of tablesElsewhere()) {
  problems.push(`${row}: a table row of an error code outside ${DOC}; link to ${DOC} instead (one table, checked here)`);
}

if (problems.length > 0) {
  console.error(`errors table: ${problems.length} problem(s):`);
  for (const p of problems) console.error(`  - ${p}`);
  process.exit(1);
}
console.log(`errors table: ${codes.size} codes, each with one row and a fix in ${DOC}`);
