/**
 * A bounded FIFO between the stream reader and the deliverer. `push` waits while the queue is
 * full (the reader stops reading; the server keeps the events, so nothing is lost); `take`
 * returns a batch once `max` items are there or `waitMs` passed since the first one arrived.
 */
import { ERROR_CODES, ListenerError } from './errors.js';

export class BoundedQueue<T> {
  private items: T[] = [];
  private closed = false;
  private wakers: Array<() => void> = [];

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.items.length;
  }

  /** The next item `take` would return, left in the queue. */
  peek(): T | undefined {
    return this.items[0];
  }

  get isFull(): boolean {
    return this.items.length >= this.capacity;
  }

  private notify(): void {
    const w = this.wakers;
    this.wakers = [];
    for (const wake of w) wake();
  }

  /** Waits for the next change of the queue, the timeout, or the signal (whichever is first). */
  private changed(timeoutMs?: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        if (timer) clearTimeout(timer);
        this.wakers = this.wakers.filter((w) => w !== done);
        reject(signal!.reason);
      };
      this.wakers.push(done);
      if (timeoutMs !== undefined) timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Adds an item, waiting while the queue is full. Calls `onFull` once if it had to wait. */
  async push(item: T, signal?: AbortSignal, onFull?: () => void): Promise<void> {
    if (this.closed) throw new ListenerError(ERROR_CODES.INTERNAL, 'push after the queue was closed (the listener is stopping)');
    if (this.isFull) {
      onFull?.();
      while (this.isFull && !this.closed) await this.changed(undefined, signal);
      if (this.closed) throw new ListenerError(ERROR_CODES.INTERNAL, 'push after the queue was closed (the listener is stopping)');
    }
    this.items.push(item);
    this.notify();
  }

  /**
   * Takes up to `max` items: waits for the first one, then up to `waitMs` more for the batch to
   * fill. Returns [] only when the queue is closed and empty.
   */
  async take(max: number, waitMs: number, signal?: AbortSignal): Promise<T[]> {
    while (this.items.length === 0) {
      if (this.closed) return [];
      await this.changed(undefined, signal);
    }
    if (this.items.length < max && waitMs > 0 && !this.closed) {
      const until = Date.now() + waitMs;
      while (this.items.length < max && !this.closed) {
        const left = until - Date.now();
        if (left <= 0) break;
        await this.changed(left, signal);
      }
    }
    const batch = this.items.splice(0, max);
    this.notify();
    return batch;
  }

  /** No more pushes; `take` drains what is left, then returns []. Safe to call twice. */
  close(): void {
    this.closed = true;
    this.notify();
  }
}
