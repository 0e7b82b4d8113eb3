/**
 * Capped exponential backoff with jitter, for retrying deliveries and reopening the stream.
 * The delay for attempt n (0-based) is drawn uniformly from [cap/2, cap] where
 * cap = min(maxMs, baseMs * 2^n): it grows fast, never exceeds maxMs, and listeners that failed
 * together do not retry in lockstep.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** Uniform random number in [0, 1); injectable for seeded tests. */
  random?: () => number;
}

export function backoffDelayMs(attempt: number, opts: BackoffOptions): number {
  const random = opts.random ?? Math.random;
  const exp = Math.min(Math.max(0, Math.floor(attempt)), 30); // 2^30 already exceeds any cap
  const cap = Math.min(opts.maxMs, opts.baseMs * 2 ** exp);
  return Math.round(cap / 2 + random() * (cap / 2));
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
