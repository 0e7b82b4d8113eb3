import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES } from './errors.js';

test('errors - every code has a row in docs/errors.md with a status and a fix', () => {
  const doc = readFileSync(fileURLToPath(new URL('../../../../docs/errors.md', import.meta.url)), 'utf8');
  for (const [code, { status }] of Object.entries(ERROR_CODES)) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
    assert.ok(row, `docs/errors.md has no row for ${code}`);
    const cells = row.split('|').map((c) => c.trim());
    // A configuration error stops the process instead of answering.
    if (code !== 'EDGE_SYNCMESH_CONFIG') assert.ok(cells[2]!.includes(String(status)), `${code}: status ${status} not in its row`);
    assert.ok(cells[4]!.length > 10, `${code}: no "how to solve"`);
  }
});
