/**
 * The retry backoff of every Syncmesh Edge component: capped exponential delays with equal
 * jitter.
 *
 * Retry number `attempt` (0 for the first retry) waits a delay drawn uniformly from
 * [cap / 2, cap], where cap = min(maxMs, baseMs * 2^attempt), rounded to whole milliseconds.
 *
 * Why equal jitter, and not the alternatives the components used before:
 * - Full jitter (uniform in [0, cap]) can retry almost at once even after many failures, so a
 *   node that is down keeps being called at random moments; it needs an extra floor to avoid
 *   that.
 * - A band around the cap (cap ± 25%) keeps a floor, but leaves the retries of nodes that failed
 *   together bunched within ±25% of each other and overshoots the maximum by a quarter.
 * - Equal jitter keeps half of the exponential wait as a floor (the wait still doubles with each
 *   failure), spreads the other half over a range as wide as the floor, so callers that failed
 *   together do not retry in lockstep, and never exceeds maxMs.
 *
 * Each component keeps its bounds in its own config; this module only computes and waits.
 */

/** The bounds of one component's retries. Callers validate them (0 < baseMs <= maxMs). */
export interface BackoffPolicy {
  /** Largest delay of the first retry (attempt 0), in ms; each later retry doubles it. */
  readonly baseMs: number;
  /** No delay is longer than this, in ms. */
  readonly maxMs: number;
}

export interface BackoffOptions extends BackoffPolicy {
  /**
   * Uniform random number in [0, 1), Math.random by default. Inject a seeded one for
   * deterministic tests: the same sequence gives the same delays.
   */
  readonly random?: () => number;
}

/** baseMs * 2^30 already exceeds any cap (2^30 ms is 12 days), so larger exponents add nothing. */
const MAX_EXPONENT = 30;

/**
 * The delay before retry number `attempt` (0-based; a fractional attempt counts as its floor, a
 * negative one as 0), in whole ms, in [cap / 2, cap] with cap = min(maxMs, baseMs * 2^attempt).
 */
export function backoffDelayMs(attempt: number, opts: BackoffOptions): number {
  const random = opts.random ?? Math.random;
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), MAX_EXPONENT);
  const cap = Math.min(opts.maxMs, opts.baseMs * 2 ** exponent);
  return Math.round(cap / 2 + random() * (cap / 2));
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts (at once when it
 * has already aborted). The abort listener is removed when the wait ends.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
