/**
 * One node's AllReduce function for `make bench-allreduce` (bench/allreduce.ts starts one per
 * node, inside the node's namespace). The same function code runs against each store:
 *   - each of `concurrency` concurrent invocations takes the node's next chunk (chunk k belongs
 *     to node k mod nodes + 1), sums its integers and adds the sum to the shared total;
 *   - then the node reads the total until it holds the whole round's sum (AllReduce: every
 *     participant ends with the result), polling every `pollMs`.
 * MISO: the node's own agent through the SDK (one client shared by the invocations on the
 * OpsBatch stream, as `runFunction` does). Redis: one connection per function process to the
 * primary, commands of concurrent invocations pipelined (what ioredis and node-redis do); the
 * total is read from the primary, or from the node's own replica.
 *
 * Protocol: one JSON command per line on stdin (init, warm, round), one JSON answer per line on
 * stdout (ready, warmed, done, error). The process exits when stdin closes.
 */
import { createInterface } from 'node:readline';
import { type RespClient as Resp, RespClient } from '@syncmesh-edge/lab';
import { MisoClient } from '@syncmesh-edge/miso-sdk';
import { allReduceData, type AllReduceSystem, type WorkerInit, type WorkerRound } from './allreduce-common.js';

const OBJECT = 'allreduce';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function say(m: object): void {
  process.stdout.write(`${JSON.stringify(m)}\n`);
}

async function main(): Promise<void> {
  let init: WorkerInit | undefined;
  let data: Int32Array = new Int32Array(0);
  let miso: MisoClient | undefined;
  let primary: Resp | undefined;
  let replica: Resp | undefined;
  const hostPort = (a: string): [string, number] => [a.slice(0, a.lastIndexOf(':')), Number(a.slice(a.lastIndexOf(':') + 1))];

  const mine = () => {
    const out: number[] = [];
    for (let k = init!.node - 1; k * init!.chunk < init!.len; k += init!.nodes) out.push(k);
    return out;
  };
  const sumChunk = (k: number) => {
    let s = 0;
    const end = Math.min(init!.len, (k + 1) * init!.chunk);
    for (let i = k * init!.chunk; i < end; i++) s += data[i]!;
    return s;
  };
  const add = (system: AllReduceSystem, key: string, n: number) =>
    system === 'miso' ? miso!.apply(init!.fn, OBJECT, key, 'gcounter', { op: 'add', n }) : primary!.cmd('INCRBY', key, String(n));
  const total = async (system: AllReduceSystem, key: string): Promise<number> => {
    if (system === 'miso') return (await miso!.read(init!.fn, OBJECT, key, 'gcounter')).value as number;
    const v = await (system === 'redis-replicas' && replica ? replica : primary)!.cmd('GET', key);
    return v === null ? 0 : Number(v);
  };

  const round = async (r: WorkerRound) => {
    const t0 = performance.now();
    const chunks = mine();
    let next = 0;
    await Promise.all(
      Array.from({ length: init!.concurrency }, async () => {
        for (let i = next++; i < chunks.length; i = next++) await add(r.system, r.key, sumChunk(chunks[i]!));
      }),
    );
    const added = performance.now() - t0;
    let v = await total(r.system, r.key);
    while (v < r.target) {
      await sleep(init!.pollMs);
      v = await total(r.system, r.key);
    }
    say({ type: 'done', system: r.system, value: v, addMs: added, ms: performance.now() - t0 });
  };

  const warm = async (ms: number) => {
    const end = performance.now() + ms;
    const systems: AllReduceSystem[] = ['miso', 'redis', ...(replica ? (['redis-replicas'] as const) : [])];
    await Promise.all(
      systems.flatMap((system) =>
        Array.from({ length: init!.concurrency }, async (_, w) => {
          for (let i = 0; performance.now() < end; i++) {
            await add(system, 'warmup', sumChunk((w + i) % Math.ceil(init!.len / init!.chunk)));
            if (i % 10 === 0) await total(system, 'warmup');
          }
        }),
      ),
    );
    say({ type: 'warmed' });
  };

  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    const m = JSON.parse(line) as WorkerInit | WorkerRound | { type: 'warm'; ms: number };
    try {
      if (m.type === 'init') {
        init = m;
        data = allReduceData(m.len, m.seed);
        miso = new MisoClient(m.sdk, 30_000, 'batch');
        await miso.register(m.fn, `allreduce-node-${m.node}`);
        primary = await RespClient.open(...hostPort(m.redis));
        if (m.replica) replica = await RespClient.open(...hostPort(m.replica));
        say({ type: 'ready' });
      } else if (m.type === 'warm') {
        await warm(m.ms);
      } else {
        await round(m);
      }
    } catch (err) {
      say({ type: 'error', message: (err as Error).message });
      process.exitCode = 1;
      break;
    }
  }
  miso?.close();
  primary?.close();
  replica?.close();
}

void main();
