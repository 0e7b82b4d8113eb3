/**
 * The elapsed-time runner: `workers` concurrent loops call `op` until the duration is over;
 * throughput is the operations completed divided by the time that really elapsed, from the
 * first operation's start to the last one's end (a loop finishes the operation it started when
 * the duration ran out, so the elapsed time is a little longer than asked for).
 */

export interface RunOptions {
  /** Concurrent loops (clients). */
  workers: number;
  /** How long new operations are started, in ms. */
  durationMs: number;
  /** One operation; `worker` is 0..workers-1, `i` counts that worker's operations. */
  op: (worker: number, i: number) => Promise<unknown>;
}

export interface RunResult {
  /** Operations completed. */
  ops: number;
  /** From the start of the first operation to the end of the last, ms. */
  elapsed_ms: number;
  /** ops / elapsed time. */
  ops_per_s: number;
  /** Latency of every operation, ms, in completion order. */
  latencies_ms: number[];
}

export async function runFor(opts: RunOptions): Promise<RunResult> {
  if (!(Number.isInteger(opts.workers) && opts.workers >= 1)) throw new RangeError(`workers must be a positive integer, got ${opts.workers}`);
  if (!(opts.durationMs > 0)) throw new RangeError(`durationMs must be positive, got ${opts.durationMs}`);
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + opts.durationMs;
  await Promise.all(
    Array.from({ length: opts.workers }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const t = performance.now();
        await opts.op(w, i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - start;
  return { ops: latencies.length, elapsed_ms: elapsed, ops_per_s: latencies.length / (elapsed / 1000), latencies_ms: latencies };
}
