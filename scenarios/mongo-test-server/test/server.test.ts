import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startTestServer } from '../src/index.js';

test('test server - starts on a free port and answers the wire protocol', async () => {
  const server = await startTestServer();
  try {
    assert.match(server.uri, /^mongodb:\/\/127\.0\.0\.1:\d+\/$/);
    const client = await MongoClient.connect(server.uri, { directConnection: true });
    try {
      const hello = await client.db('admin').command({ isMaster: 1 });
      assert.equal(hello['maxWireVersion'], 8);
    } finally {
      await client.close();
    }
  } finally {
    await server.stop();
    await server.stop(); // safe twice
  }
});

test('test server - keeps data across restarts with a data directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sme-mts-'));
  try {
    let server = await startTestServer({ dataDir: dir });
    let client = await MongoClient.connect(server.uri, { directConnection: true });
    await client.db('d').collection('c').insertMany([{ n: 1 }, { n: 2 }]);
    await client.close();
    await server.stop();

    server = await startTestServer({ dataDir: dir });
    client = await MongoClient.connect(server.uri, { directConnection: true });
    assert.equal(await client.db('d').collection('c').countDocuments(), 2);
    await client.close();
    await server.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('test server - a taken port fails fast with the reason', async () => {
  const first = await startTestServer();
  try {
    await assert.rejects(startTestServer({ port: first.port }), /cannot listen on 127\.0\.0\.1:\d+/);
  } finally {
    await first.stop();
  }
});

test('test server - change streams report inserts and deletes', async () => {
  const server = await startTestServer();
  const client = await MongoClient.connect(server.uri, { directConnection: true });
  try {
    const coll = client.db('d').collection('c');
    const stream = coll.watch();
    // tryNext() opens the cursor and returns null while nothing happened yet.
    assert.equal(await stream.tryNext(), null);
    const { insertedId } = await coll.insertOne({ n: 1 });
    await coll.deleteOne({ _id: insertedId });
    const seen: string[] = [];
    for (let polls = 0; seen.length < 2 && polls < 100; polls++) {
      const change = await stream.tryNext();
      if (change) seen.push(change.operationType);
    }
    assert.deepEqual(seen, ['insert', 'delete']);
    await stream.close();
  } finally {
    await client.close();
    await server.stop();
  }
});
