/** Records operations on coordination objects as a history lincheck (Porcupine) reads. */
import { writeFileSync } from 'node:fs';
import { CoordinationError } from '@syncmesh-edge/coordination-sdk';

export type OpName = 'read' | 'write' | 'add' | 'cas';
export type OpStatus = 'ok' | 'fail' | 'unknown';

export interface HistoryOp {
  client: number;
  key: string;
  op: OpName;
  arg?: unknown;
  out?: unknown;
  status: OpStatus;
  /** ns since the recorder started (one monotonic clock) */
  call: number;
  ret?: number;
  /** not checked: where the op ran, and its error code */
  node?: number;
  error?: string;
}

export class HistoryRecorder {
  readonly ops: HistoryOp[] = [];
  /** What a key reads as before any write (default null): 0 for AtomicLong and Counter. */
  readonly init: Record<string, unknown> = {};
  private readonly t0 = process.hrtime.bigint();

  now(): number {
    return Number(process.hrtime.bigint() - this.t0);
  }

  /**
   * Runs `fn` and records it: ok with its result; fail when the SDK says it certainly did not
   * happen (an UNAVAILABLE read, a write that never reached the cluster); unknown otherwise.
   */
  async record<T>(client: number, node: number, key: string, op: OpName, arg: unknown, fn: () => Promise<T>, isWrite: boolean): Promise<T | undefined> {
    const call = this.now();
    try {
      const out = await fn();
      this.ops.push({ client, node, key, op, arg, out: out === undefined ? null : out, status: 'ok', call, ret: this.now() });
      return out;
    } catch (err) {
      const code = err instanceof CoordinationError ? err.code : String((err as Error)?.name);
      const certainNoEffect = err instanceof CoordinationError && (!isWrite || !err.indeterminate) && code !== 'EDGE_COORDINATION_SDK_CORRUPT';
      this.ops.push({ client, node, key, op, arg, status: certainNoEffect ? 'fail' : 'unknown', call, ret: this.now(), error: code });
      return undefined;
    }
  }

  write(path: string): void {
    writeFileSync(path, JSON.stringify({ init: this.init, ops: this.ops }));
  }
}
