/**
 * Test helper: loads recorded change events from listeners/test/fixtures (canonical EJSON, so
 * ObjectId, Date, Timestamp and number types are exact). Only tests import this module.
 */
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BSON, type Document } from 'mongodb';

/** listeners/ from both src/ and dist/src/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

export function loadFixture(name: string): Document {
  const text = readFileSync(join(packageRoot(), 'test', 'fixtures', `${name}.json`), 'utf8');
  // relaxed: numbers come back as JS numbers, as the driver hands them over (promoteValues).
  return BSON.EJSON.parse(text, { relaxed: true }) as Document;
}
