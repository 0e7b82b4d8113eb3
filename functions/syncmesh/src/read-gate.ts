/**
 * A bound on signed bodies read at once. The header check of a signed request needs no key (node
 * ids are public), so anyone can make /events, /resync and /replicate read a body of up to
 * SIGNED_BODY_FACTOR × SYNCMESH_MAX_BODY_BYTES before the MAC refuses it. With at most `slots`
 * such reads at a time, that costs this node at most slots × that much memory, however many
 * connections an attacker opens. A request that finds every slot taken waits (in order) for up to
 * `waitMs`, then gets a coded 503 that senders retry (the outboxes do); waiters beyond `queue`
 * get it at once.
 */
import { SyncmeshError } from './errors.js';

export interface ReadGateOptions {
  slots: number;
  queue: number;
  waitMs: number;
  /** What the slots are for, in the EDGE_SYNCMESH_BUSY message. Default: signed request body reads. */
  what?: string;
}

export class ReadGate {
  private busy = 0;
  private readonly waiting: Array<{ grant: () => void }> = [];

  constructor(private readonly opts: ReadGateOptions) {}

  /** How many reads hold a slot now (for tests and logs). */
  get inUse(): number {
    return this.busy;
  }

  /** Resolves with a release function once a slot is free; rejects with EDGE_SYNCMESH_BUSY. */
  acquire(): Promise<() => void> {
    if (this.busy < this.opts.slots) {
      this.busy++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.opts.queue) return Promise.reject(this.busyError());
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          clearTimeout(timer);
          resolve(this.releaser());
        },
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(this.busyError());
      }, this.opts.waitMs);
      this.waiting.push(entry);
    });
  }

  /** Runs `read` holding a slot. */
  async run<T>(read: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await read();
    } finally {
      release();
    }
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      // the slot passes straight to the next waiter
      if (next) next.grant();
      else this.busy--;
    };
  }

  private busyError(): SyncmeshError {
    const what = this.opts.what ?? 'signed request body reads';
    return new SyncmeshError('EDGE_SYNCMESH_BUSY', `this node is already running ${this.opts.slots} ${what}; retry in a moment`, {
      details: { allowed: `at most ${this.opts.slots} ${what} at once, ${this.opts.queue} waiting up to ${this.opts.waitMs} ms` },
    });
  }
}
