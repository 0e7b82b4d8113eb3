/**
 * Answers a client has not read yet (issue 27): a few clients that send costly queries and never
 * read the answers would otherwise keep every answer in this process's memory. Each answer still
 * being written is counted until it is flushed to the socket; past SYNCMESH_MAX_PENDING_ANSWER_BYTES
 * in total, new queries are refused (503) before their body is read, and an answer not flushed
 * within the request deadline is dropped with its connection.
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
