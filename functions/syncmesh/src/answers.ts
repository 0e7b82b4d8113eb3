/**
 * The memory answers take (issue 27). Answers a client has not read yet: a few clients that send costly queries and never
 * read the answers would otherwise keep every answer in this process's memory. Each answer still
 * being written is counted until it is flushed to the socket; past SYNCMESH_MAX_PENDING_ANSWER_BYTES
 * in total, new queries are refused (503) before their body is read, and an answer not flushed
 * within the request deadline is dropped with its connection. Answers being built: each data
 * request reserves the values its answer may hold (the estimate its limits were checked against)
 * while it runs; past SYNCMESH_MAX_VALUES_IN_FLIGHT in total a new one is refused (503), except
 * when nothing else runs (one request is bounded by SYNCMESH_MAX_ANSWER_VALUES alone).
 */
import type { ServerResponse } from 'node:http';
import { SyncmeshError } from './errors.js';

export class PendingAnswers {
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    /** How long an answer may take to be flushed to its client. */
    private readonly flushWithinMs: number,
  ) {}

  /** Throws EDGE_SYNCMESH_BUSY while unread answers hold more than the cap. */
  admit(): void {
    if (this.bytes > this.maxBytes) {
      throw new SyncmeshError('EDGE_SYNCMESH_BUSY', `answers of ${this.bytes} bytes are waiting for their clients to read them; try again shortly`, {
        details: { allowed: `at most ${this.maxBytes} bytes of unread answers at once (SYNCMESH_MAX_PENDING_ANSWER_BYTES)` },
      });
    }
  }

  /** Call after `res.end(payload)`: counts the payload until it is flushed, drops the connection if that takes too long. */
  track(res: ServerResponse, size: number): void {
    if (res.writableFinished) return;
    this.bytes += size;
    const timer = setTimeout(() => res.destroy(), this.flushWithinMs);
    timer.unref();
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.bytes -= size;
    };
    res.once('finish', done);
    res.once('close', done);
  }

  get pendingBytes(): number {
    return this.bytes;
  }
}

export class ValuesInFlight {
  private values = 0;

  constructor(private readonly maxValues: number) {}

  /** Reserves `values` until the returned release is called; throws EDGE_SYNCMESH_BUSY past the cap. */
  admit(values: number): () => void {
    if (this.values > 0 && this.values + values > this.maxValues) {
      throw new SyncmeshError('EDGE_SYNCMESH_BUSY', `answers of ${this.values} values are being built; this one may hold ${values} more; try again shortly`, {
        details: { allowed: `at most ${this.maxValues} estimated answer values in requests running at once (SYNCMESH_MAX_VALUES_IN_FLIGHT)` },
      });
    }
    this.values += values;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.values -= values;
    };
  }

  get inFlight(): number {
    return this.values;
  }
}
