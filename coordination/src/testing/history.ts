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

/**
 * What an operation that threw tells the checker: `fail` (dropped from the history) only when the
 * SDK says it certainly had no effect: a read (it changes nothing), or a write whose
 * CoordinationError is not `indeterminate` (refused before anything was sent, or every write it
 * sent was settled as not stored; see Store.settle). Anything else may have taken effect: `unknown`,
 * and so is a write that stored a value it then could not decode (CORRUPT) or an error that is not
 * the SDK's.
 */
export function outcomeOf(err: unknown, isWrite: boolean): 'fail' | 'unknown' {
  if (!(err instanceof CoordinationError)) return 'unknown';
  if (!isWrite) return 'fail';
  return err.indeterminate || err.code === 'EDGE_COORDINATION_SDK_CORRUPT' ? 'unknown' : 'fail';
}

export class HistoryRecorder {
  readonly ops: HistoryOp[] = [];
  /** What a key reads as before any write (default null): 0 for AtomicLong and Counter. */
  readonly init: Record<string, unknown> = {};
  private readonly t0 = process.hrtime.bigint();

  now(): number {
    return Number(process.hrtime.bigint() - this.t0);
  }

  /** Runs `fn` and records it: ok with its result, or what its error tells (outcomeOf). */
  async record<T>(client: number, node: number, key: string, op: OpName, arg: unknown, fn: () => Promise<T>, isWrite: boolean): Promise<T | undefined> {
    const call = this.now();
    try {
      const out = await fn();
      this.ops.push({ client, node, key, op, arg, out: out === undefined ? null : out, status: 'ok', call, ret: this.now() });
      return out;
    } catch (err) {
      const code = err instanceof CoordinationError ? err.code : String((err as Error)?.name);
      this.ops.push({ client, node, key, op, arg, status: outcomeOf(err, isWrite), call, ret: this.now(), error: code });
      return undefined;
    }
  }

  write(path: string): void {
    writeFileSync(path, JSON.stringify({ init: this.init, ops: this.ops }));
  }
}
