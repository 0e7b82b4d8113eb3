/**
 * What this agent knows about one peer: identity, the functions it runs, liveness and
 * replication statistics (bytes, messages, acknowledgement lag). No sockets.
 */

/** How many send times to remember for lag measurement; older unacked ones are dropped. */
const MAX_INFLIGHT = 10_000;

export interface PeerStats {
  bytesSent: number;
  /** Bytes of Updates messages only (deltas and full states). */
  updateBytesSent: number;
  updateMessagesSent: number;
  /** Bytes of debounced replication (deltas) only, without full states and repairs. */
  deltaBytesSent: number;
  bytesReceived: number;
  messagesSent: number;
  messagesReceived: number;
  lagLastMs: number;
  lagSumMs: number;
  lagCount: number;
}

export class PeerSync {
  functions = new Set<string>();
  address: string;
  incarnation = '';
  lastHeardMs: number;
  readonly stats: PeerStats = {
    bytesSent: 0,
    updateBytesSent: 0,
    updateMessagesSent: 0,
    deltaBytesSent: 0,
    bytesReceived: 0,
    messagesSent: 0,
    messagesReceived: 0,
    lagLastMs: 0,
    lagSumMs: 0,
    lagCount: 0,
  };
  private nextSeq = 1;
  private readonly inflight = new Map<number, number>();

  constructor(
    readonly nodeId: string,
    address: string,
    now: number,
  ) {
    this.address = address;
    this.lastHeardMs = now;
  }

  /** Last time debounced updates of each function went either way on this peer's streams. */
  private readonly lastActivity = new Map<string, number>();

  activity(fn: string, now: number): void {
    this.lastActivity.set(fn, now);
  }

  /** True while updates of `fn` flowed within `windowMs` (anti-entropy waits for quiet). */
  busyWith(fn: string, now: number, windowMs: number): boolean {
    const t = this.lastActivity.get(fn);
    return t !== undefined && now - t < windowMs;
  }

  runs(fn: string): boolean {
    return this.functions.has(fn);
  }

  heard(now: number, bytes: number): void {
    this.lastHeardMs = now;
    this.stats.bytesReceived += bytes;
    this.stats.messagesReceived += 1;
  }

  isSilent(now: number, timeoutMs: number): boolean {
    return now - this.lastHeardMs > timeoutMs;
  }

  sent(bytes: number): void {
    this.stats.bytesSent += bytes;
    this.stats.messagesSent += 1;
  }

  /** Reserves a seq for an Updates message that wants an ack; `now` is a high-resolution clock (ms). */
  reserveSeq(now: number): number {
    const seq = this.nextSeq++;
    if (this.inflight.size >= MAX_INFLIGHT) {
      const oldest = this.inflight.keys().next().value;
      if (oldest !== undefined) this.inflight.delete(oldest);
    }
    this.inflight.set(seq, now);
    return seq;
  }

  acked(seq: number, now: number): number | undefined {
    const t = this.inflight.get(seq);
    if (t === undefined) return undefined;
    // Acks arrive in order on one stream: everything up to seq is acknowledged too.
    for (const s of this.inflight.keys()) {
      if (s > seq) break;
      this.inflight.delete(s);
    }
    const lag = now - t;
    this.stats.lagLastMs = lag;
    this.stats.lagSumMs += lag;
    this.stats.lagCount += 1;
    return lag;
  }

  /** A broken stream loses its unacked messages' timing (the full state on reconnect covers them). */
  resetInflight(): void {
    this.inflight.clear();
  }

  get unacked(): number {
    return this.inflight.size;
  }
}
