/**
 * Request ids this node has already answered, so that a request reaching a node twice (nodes
 * that list each other, hop limits above 1) is counted once. Entries expire after `ttlMs`; the
 * map never holds more than `maxEntries`.
 */
export class SeenRequests {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly ttlMs = 5 * 60_000,
    private readonly maxEntries = 100_000,
  ) {}

  /** Records `id`; returns false when it was already recorded (and not expired). */
  firstTime(id: string, nowMs = Date.now()): boolean {
    const expires = this.seen.get(id);
    if (expires !== undefined && expires > nowMs) return false;
    if (this.seen.size >= this.maxEntries) this.evict(nowMs);
    this.seen.set(id, nowMs + this.ttlMs);
    return true;
  }

  private evict(nowMs: number): void {
    for (const [id, expires] of this.seen) if (expires <= nowMs) this.seen.delete(id);
    // Still full: drop the oldest entries (Map iterates in insertion order).
    for (const id of this.seen.keys()) {
      if (this.seen.size < this.maxEntries) break;
      this.seen.delete(id);
    }
  }
}
