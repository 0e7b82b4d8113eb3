/**
 * --durable-writes (`durableWrites`): every write a client got an answer for survives kill -9 of
 * the server (what the mesh's chaos test does to a node's database), as MongoDB's journal keeps
 * acknowledged writes; without it, H2 commits about once a second and kill -9 loses the writes of
 * the last second.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startTestServer, testServerCommand, type TestServer } from '../src/index.js';

/** Kills the server with SIGKILL and waits until its process is gone. */
async function kill9(server: TestServer): Promise<void> {
  process.kill(server.pid, 'SIGKILL');
  for (let i = 0; i < 200; i++) {
    try {
      process.kill(server.pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`test server ${server.pid} still runs after SIGKILL`);
}

/** Acknowledged single writes, then kill -9 at once; what survives the restart. */
async function writeThenKill(durableWrites: boolean): Promise<{ expected: Map<number, number>; found: Map<number, number> }> {
  const dir = mkdtempSync(join(tmpdir(), 'sme-mts-durable-'));
  try {
    let server = await startTestServer({ dataDir: dir, durableWrites });
    let client = await MongoClient.connect(server.uri, { directConnection: true });
    const c = client.db('d').collection<{ _id: number; v: number }>('c');
    const expected = new Map<number, number>();
    for (let i = 0; i < 200; i++) {
      await c.insertOne({ _id: i, v: 0 });
      expected.set(i, 0);
    }
    await c.insertMany(Array.from({ length: 100 }, (_, k) => ({ _id: 1000 + k, v: 0 })));
    for (let k = 0; k < 100; k++) expected.set(1000 + k, 0);
    for (let i = 0; i < 200; i += 3) {
      await c.updateOne({ _id: i }, { $set: { v: i + 1 } });
      expected.set(i, i + 1);
    }
    for (let i = 1; i < 200; i += 7) {
      await c.replaceOne({ _id: i }, { v: -i });
      expected.set(i, -i);
    }
    for (let i = 2; i < 200; i += 11) {
      await c.deleteOne({ _id: i });
      expected.delete(i);
    }
    // no pause: the last acknowledgement, then the kill
    await kill9(server);
    await client.close(true);
    server = await startTestServer({ dataDir: dir, durableWrites });
    client = await MongoClient.connect(server.uri, { directConnection: true });
    const found = new Map((await client.db('d').collection<{ _id: number; v: number }>('c').find().toArray()).map((d) => [d._id, d.v] as const));
    await client.close();
    await server.stop();
    return { expected, found };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('test server - with --durable-writes, every acknowledged insert, update, replace and delete survives kill -9', async () => {
  const { expected, found } = await writeThenKill(true);
  assert.deepEqual(
    [...found].sort((a, b) => a[0] - b[0]),
    [...expected].sort((a, b) => a[0] - b[0]),
  );
});

test('test server - without --durable-writes, kill -9 may lose the acknowledged writes of the last second (reported, not asserted)', async () => {
  const { expected, found } = await writeThenKill(false);
  const differ = [...new Set([...expected.keys(), ...found.keys()])].filter((k) => expected.get(k) !== found.get(k)).length;
  console.log(`# without --durable-writes: ${differ} of ${expected.size} acknowledged documents differ after kill -9`);
});

test('test server - --durable-writes without --data-dir is refused before it starts', () => {
  const [cmd, ...args] = testServerCommand({ port: 0, durableWrites: true });
  const r = spawnSync(cmd!, args, { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--durable-writes needs --data-dir/);
});
