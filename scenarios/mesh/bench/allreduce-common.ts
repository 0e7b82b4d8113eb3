/** What bench/allreduce.ts and the function it runs on every node (allreduce-worker.ts) share. */

export type AllReduceSystem = 'miso' | 'redis' | 'redis-replicas';

export interface WorkerInit {
  type: 'init';
  node: number;
  nodes: number;
  len: number;
  chunk: number;
  seed: number;
  concurrency: number;
  pollMs: number;
  /** The node's agent SDK endpoint and the function name it registers. */
  sdk: string;
  fn: string;
  /** host:port of the Redis primary as this node reaches it (across its link, or local on the primary's node). */
  redis: string;
  /** host:port of this node's own replica (absent on the primary's node). */
  replica?: string;
}

export interface WorkerRound {
  type: 'round';
  system: AllReduceSystem;
  /** The counter (MISO CRDT name, Redis key) of this system. */
  key: string;
  /** The total the counter holds once every node's adds of this round are in. */
  target: number;
}

/** The integers every node derives from the same seed: 1..1000, so every partial sum is below the total. */
export function allReduceData(len: number, seed: number): Int32Array {
  let s = seed;
  const out = new Int32Array(len);
  for (let i = 0; i < len; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out[i] = (s % 1000) + 1;
  }
  return out;
}
