import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Binary, BSON, type Document, MongoClient, type MongoClientOptions } from 'mongodb';
import { startTestServer, type TestServerOptions } from '../src/index.js';

/** Runs `body` with a driver client (`clientOpts`) of a fresh test server (`opts`); both are closed afterwards, whatever happens. */
async function withServer<T>(opts: TestServerOptions, clientOpts: MongoClientOptions, body: (client: MongoClient) => Promise<T>): Promise<T> {
  const server = await startTestServer(opts);
  try {
    const client = await MongoClient.connect(server.uri, clientOpts);
    try {
      return await body(client);
    } finally {
      await client.close();
    }
  } finally {
    await server.stop();
  }
}

test('test server - starts on a free port and answers the wire protocol', async () => {
  const server = await startTestServer();
  try {
    assert.match(server.uri, /^mongodb:\/\/127\.0\.0\.1:\d+\/$/);
    const client = await MongoClient.connect(server.uri, { directConnection: true });
    try {
      assert.equal((await client.db('admin').command({ ping: 1 }))['ok'], 1);
    } finally {
      await client.close();
    }
  } finally {
    await server.stop();
    await server.stop(); // safe twice
  }
});

test('test server - says it is MongoDB 7.0 (wire version 21) and answers hello as a standalone does', async () => {
  await withServer({}, {}, async (client) => {
    const admin = client.db('admin');
    const hello = await admin.command({ hello: 1, helloOk: true });
    assert.equal(hello['isWritablePrimary'], true);
    assert.equal(hello['helloOk'], true);
    assert.equal(hello['maxWireVersion'], 21);
    assert.equal(hello['logicalSessionTimeoutMinutes'], 30);
    assert.equal(typeof hello['connectionId'], 'number');
    assert.equal(hello['setName'], undefined, 'not a replica set');
    assert.equal(hello['topologyVersion'], undefined, 'no streaming monitor: the server answers every hello at once');
    assert.equal((await admin.command({ isMaster: 1 }))['ismaster'], true);
    assert.equal((await admin.command({ buildInfo: 1 }))['version'], '7.0.0');
    // sessions: the driver sends lsid with every command, and endSessions when it closes
    const session = client.startSession();
    await client.db('d').collection('c').insertOne({ n: 1 }, { session });
    await session.endSession();
    // transactions are refused as on a standalone MongoDB (the test server has none to offer):
    // code 20, which the driver words as for MongoDB
    const txn = client.startSession();
    txn.startTransaction();
    await assert.rejects(client.db('d').collection('c').insertOne({ n: 2 }, { session: txn }), /does not support retryable writes/);
    await txn.abortTransaction().catch(() => undefined); // the server refuses that too; nothing was started
    await txn.endSession();
    assert.equal(await client.db('d').collection('c').countDocuments(), 1);
  });
});

test('test server - a message it cannot read is answered with an error and the connection stays open', async () => {
  // The library reads binary subtypes 0, 3, 4 and 128 only; it used to close the connection
  // ("connection closed" in pymongo) instead of answering.
  await withServer({}, { maxPoolSize: 1 }, async (client) => {
    const closed: string[] = [];
    client.on('connectionClosed', (e) => closed.push(e.reason));
    const coll = client.db('d').collection('c');
    await coll.insertOne({ _id: 1, n: 1 } as never);
    const md5 = new Binary(Buffer.alloc(16, 7), Binary.SUBTYPE_MD5);
    await assert.rejects(coll.replaceOne({ _id: 1 } as never, { digest: md5 }), (err: { code?: number; message: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.message, /cannot read this message: Unknown subtype: 5/);
      return true;
    });
    assert.equal(await coll.countDocuments({ n: 1 }), 1, 'the next command is answered');
    assert.deepEqual(closed, [], 'no connection was closed');
  });
});

test('test server - unacknowledged writes (w: 0) run, and the connection stays open', async () => {
  await withServer({}, { maxPoolSize: 1 }, async (client) => {
    const closed: string[] = [];
    client.on('connectionClosed', (e) => closed.push(e.reason));
    const unacknowledged = client.db('d').collection('c', { writeConcern: { w: 0 } });
    await unacknowledged.insertOne({ _id: 1, n: 1 } as never);
    await unacknowledged.replaceOne({ _id: 1 } as never, { n: 2 });
    const coll = client.db('d').collection('c');
    let n: unknown;
    for (let polls = 0; n !== 2 && polls < 200; polls++) n = (await coll.findOne({ _id: 1 } as never))?.['n'];
    assert.equal(n, 2);
    assert.deepEqual(closed, [], 'no connection was closed');
  });
});

test('test server - keeps data across restarts with a data directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sme-mts-'));
  try {
    let server = await startTestServer({ dataDir: dir });
    let client = await MongoClient.connect(server.uri, { directConnection: true });
    await client
      .db('d')
      .collection('c')
      .insertMany([{ n: 1 }, { n: 2 }]);
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

test('test server - collStats reports the BSON size of the documents after inserts, updates and deletes (in memory and on disk)', async () => {
  // The size is computed when asked (ObservedBackends.dataSizeOf), not kept up to date by every write.
  const dir = mkdtempSync(join(tmpdir(), 'sme-mts-'));
  try {
    for (const opts of [{}, { dataDir: dir }]) {
      await withServer(opts, { directConnection: true }, async (client) => {
        const db = client.db('d');
        const c = db.collection<{ _id: number; [k: string]: unknown }>('sizes');
        await c.insertMany([1, 2, 3, 4].map((n) => ({ _id: n, n, s: 'x'.repeat(n * 10) })));
        await c.updateOne({ _id: 2 }, { $set: { s: 'y'.repeat(100) } });
        await c.replaceOne({ _id: 3 }, { _id: 3, other: true });
        await c.deleteOne({ _id: 4 });
        const expected = (await c.find().toArray()).reduce((sum, d) => sum + BSON.calculateObjectSize(d), 0);
        const stats = await db.command({ collStats: 'sizes' });
        assert.equal(stats['count'], 3, JSON.stringify(opts));
        assert.equal(stats['size'], expected, JSON.stringify(opts));
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('test server - a stream resumed after a restart from a token of the previous run fails with ChangeStreamHistoryLost', async () => {
  // The oplog lives in memory: the changes between the token and the restart are gone. Resuming
  // as if nothing had happened would skip them silently (the chaos test lost replicas that way).
  const dir = mkdtempSync(join(tmpdir(), 'sme-mts-'));
  try {
    let server = await startTestServer({ dataDir: dir });
    let client = await MongoClient.connect(server.uri, { directConnection: true });
    let coll = client.db('d').collection('c');
    const stream = coll.watch();
    assert.equal(await stream.tryNext(), null);
    await coll.insertOne({ n: 1 });
    let first = null;
    for (let polls = 0; !first && polls < 200; polls++) first = await stream.tryNext();
    assert.ok(first, 'the insert was seen');
    await stream.close();
    await coll.insertOne({ n: 2 }); // after the token, before the restart: not in the new oplog
    await client.close();
    await server.stop();
    // Oplog timestamps count seconds: a restart inside the token's second cannot tell the token
    // from its own first entries, so restart in a later second (a real restart takes longer).
    const tokenSecond = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) <= tokenSecond) await new Promise((r) => setTimeout(r, 20));

    server = await startTestServer({ dataDir: dir });
    client = await MongoClient.connect(server.uri, { directConnection: true });
    coll = client.db('d').collection('c');
    assert.equal(await coll.countDocuments(), 2);
    const resumed = coll.watch([], { startAfter: first._id });
    await assert.rejects(resumed.tryNext(), (err: { code?: number; codeName?: string }) => err.code === 286 && err.codeName === 'ChangeStreamHistoryLost');
    await resumed.close();
    // a stream opened from now after the restart works as before
    const fresh = coll.watch();
    assert.equal(await fresh.tryNext(), null);
    await coll.insertOne({ n: 3 });
    let next = null;
    for (let polls = 0; !next && polls < 200; polls++) next = await fresh.tryNext();
    assert.equal((next as { fullDocument?: { n: number } } | null)?.fullDocument?.n, 3);
    // the on-disk store reports updates as well
    await coll.updateOne({ n: 3 }, { $set: { n: 4 } });
    let update = null;
    for (let polls = 0; !update && polls < 200; polls++) update = await fresh.tryNext();
    assert.equal(update?.operationType, 'update');
    assert.deepEqual((update as { updateDescription?: unknown } | null)?.updateDescription, {
      updatedFields: { n: 4 },
      removedFields: [],
      truncatedArrays: [],
    });
    await fresh.close();
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

test('test server - change streams report inserts, updates, replaces and deletes with the document key', async () => {
  await withServer({}, { directConnection: true }, async (client) => {
    const coll = client.db('d').collection('c');
    const stream = coll.watch([], { fullDocument: 'updateLookup' });
    // tryNext() opens the cursor and returns null while nothing happened yet.
    assert.equal(await stream.tryNext(), null);
    assert.ok(stream.resumeToken, 'an empty batch carries a postBatchResumeToken');
    const { insertedId } = await coll.insertOne({ n: 1, gone: true });
    await coll.updateOne({ _id: insertedId }, { $set: { n: 2 }, $unset: { gone: '' } });
    await coll.replaceOne({ _id: insertedId }, { n: 3 });
    await coll.deleteOne({ _id: insertedId });
    const seen: Document[] = [];
    for (let polls = 0; seen.length < 4 && polls < 100; polls++) {
      const change = await stream.tryNext();
      if (change) seen.push(change);
    }
    assert.deepEqual(
      seen.map((c) => c['operationType']),
      ['insert', 'update', 'replace', 'delete'],
    );
    for (const c of seen) {
      assert.deepEqual(c['documentKey'], { _id: insertedId });
      assert.deepEqual(c['ns'], { db: 'd', coll: 'c' });
    }
    assert.deepEqual(seen[1]!['updateDescription'], { updatedFields: { n: 2 }, removedFields: ['gone'], truncatedArrays: [] });
    assert.equal(seen[1]!['fullDocument'], null, 'updateLookup: the document was deleted before the event was read');
    assert.deepEqual(seen[2]!['fullDocument'], { _id: insertedId, n: 3 });
    assert.deepEqual(stream.resumeToken, seen[3]!['_id']);
    await stream.close();
  });
});

test('test server - fullDocument modes that need stored pre- or post-images are refused with a clear error', async () => {
  await withServer({}, {}, async (client) => {
    const stream = client.db('d').collection('c').watch([], { fullDocument: 'required' });
    await assert.rejects(stream.tryNext(), /fullDocument: 'required' is not supported by the test server/);
    await stream.close();
  });
});

test('test server - the oplog is capped: a resume behind it fails with ChangeStreamHistoryLost, a resume inside it continues', async () => {
  await withServer({ oplogMaxEntries: 50 }, { directConnection: true }, async (client) => {
    const coll = client.db('d').collection('c');
    const next = async (stream: ReturnType<typeof coll.watch>) => {
      for (let polls = 0; polls < 200; polls++) {
        const change = await stream.tryNext();
        if (change) return change;
      }
      throw new Error('no change event');
    };
    const stream = coll.watch();
    assert.equal(await stream.tryNext(), null);
    await coll.insertOne({ n: 0 });
    const first = await next(stream);
    await stream.close();
    // 10 more writes: the first one's entry is still in the oplog, resuming after it sees n: 1
    await coll.insertMany(Array.from({ length: 10 }, (_, i) => ({ n: i + 1 })));
    const inside = coll.watch([], { startAfter: first._id });
    assert.equal(((await next(inside)) as { fullDocument: { n: number } }).fullDocument.n, 1);
    await inside.close();
    // 100 more: the oplog keeps the newest 50, so the first entry is gone
    await coll.insertMany(Array.from({ length: 100 }, (_, i) => ({ n: i + 11 })));
    const behind = coll.watch([], { startAfter: first._id });
    await assert.rejects(behind.tryNext(), (err: { code?: number; codeName?: string }) => err.code === 286 && err.codeName === 'ChangeStreamHistoryLost');
    await behind.close();
  });
});

test('test server - a stream whose collection is quiet still sees its next event after writes elsewhere', async () => {
  await withServer({}, { directConnection: true }, async (client) => {
    const watched = client.db('d').collection('watched');
    const other = client.db('d').collection('other');
    // each empty poll waits maxAwaitTimeMS for an event (MongoDB's default: 1 s)
    const stream = watched.watch([], { maxAwaitTimeMS: 50 });
    assert.equal(await stream.tryNext(), null);
    const seen: number[] = [];
    for (let round = 0; round < 3; round++) {
      await other.insertMany(Array.from({ length: 20 }, (_, i) => ({ i })));
      // polls that find only the other collection's entries return nothing
      for (let polls = 0; polls < 3; polls++) assert.equal(await stream.tryNext(), null);
      await watched.insertOne({ round });
      for (let polls = 0; polls < 100; polls++) {
        const change = await stream.tryNext();
        if (change) {
          seen.push((change as unknown as { fullDocument: { round: number } }).fullDocument.round);
          break;
        }
      }
    }
    assert.deepEqual(seen, [0, 1, 2]);
    await stream.close();
  });
});

test('test server - a change stream getMore with nothing to return waits for an event of its collection (up to maxAwaitTimeMS), as MongoDB does', async () => {
  const server = await startTestServer();
  const client = await MongoClient.connect(server.uri, { directConnection: true });
  const writer = await MongoClient.connect(server.uri, { directConnection: true });
  try {
    const watched = client.db('d').collection('watched');
    const awaitMs = 400;
    const stream = watched.watch([], { maxAwaitTimeMS: awaitMs });
    assert.equal(await stream.tryNext(), null); // opens the stream
    // nothing comes: the poll is answered empty once maxAwaitTimeMS has passed, not at once
    const t0 = performance.now();
    assert.equal(await stream.tryNext(), null);
    const idleMs = performance.now() - t0;
    assert.ok(idleMs >= awaitMs * 0.9, `an idle getMore waited ${idleMs.toFixed(0)} ms, not maxAwaitTimeMS (${awaitMs} ms)`);
    // a waiting poll is answered with the event written meanwhile; writes elsewhere do not end it
    for (let round = 0; round < 3; round++) {
      const polled = stream.tryNext();
      await writer.db('d').collection('other').insertOne({ round });
      await writer.db('d').collection('watched').insertOne({ round });
      const change = (await polled) as unknown as { operationType: string; fullDocument: { round: number } } | null;
      assert.ok(change, `round ${round}: the waiting poll came back empty`);
      assert.equal(change.operationType, 'insert');
      assert.equal(change.fullDocument.round, round);
    }
    // a getMore without maxTimeMS waits too (MongoDB's default, 1 s), and a closed stream's wait ends quietly
    const plain = watched.watch();
    assert.equal(await plain.tryNext(), null);
    const waiting = plain.tryNext();
    await writer.db('d').collection('watched').insertOne({ plain: true });
    assert.equal(((await waiting) as unknown as { fullDocument: { plain: boolean } }).fullDocument.plain, true);
    await plain.close();
    await stream.close();
  } finally {
    await writer.close();
    await client.close();
    await server.stop();
  }
});

test('test server - an open stream that fell behind the capped oplog fails with ChangeStreamHistoryLost; one whose collection was quiet does not', async () => {
  await withServer({ oplogMaxEntries: 50 }, { directConnection: true }, async (client) => {
    const busy = client.db('d').collection('busy');
    const quietColl = client.db('d').collection('quiet');
    const behind = busy.watch([], { maxAwaitTimeMS: 50 });
    const quiet = quietColl.watch([], { maxAwaitTimeMS: 50 });
    assert.equal(await behind.tryNext(), null);
    assert.equal(await quiet.tryNext(), null);
    // 100 writes to `busy` while neither stream reads: the oplog keeps only the newest 50
    await busy.insertMany(Array.from({ length: 100 }, (_, i) => ({ i })));
    await assert.rejects(behind.tryNext(), (err: { code?: number }) => err.code === 286);
    assert.equal(await quiet.tryNext(), null, 'nothing of its own collection was dropped');
    await quietColl.insertOne({ n: 1 });
    let change = null;
    for (let polls = 0; polls < 100 && !change; polls++) change = await quiet.tryNext();
    assert.equal((change as unknown as { fullDocument: { n: number } }).fullDocument.n, 1);
    await Promise.all([behind.close(), quiet.close()]);
  });
});
