/**
 * Flow control of one sender: how many readings (operations) one /replicate request to this
 * subscriber may carry, from the subscriber's real apply rate.
 *
 * The subscriber reports how long each batch took to apply; the sender keeps a moving average of
 * the time per reading and never sends more than the subscriber applies in `targetMs` (a
 * fraction of the delivery deadline), so a request is answered long before its deadline. A
 * timeout or a 413 halves the budget at once; after each request that was applied in time it
 * grows again by a quarter, never above what the measured rate allows.
 */
export interface FlowOptions {
  /** Apply time one request should take at most, ms. */
  targetMs: number;
  /** Budget before anything was measured, readings. */
  initial: number;
  /** Smallest budget (a request still carries at least one whole batch). */
  min: number;
  /** Largest budget. */
  max: number;
}

/** Weight of the newest measurement in the moving average of ms per reading. */
const EWMA_WEIGHT = 0.3;
/** Growth per request applied in time. */
const GROWTH = 1.25;

export class FlowControl {
  private budgetReadings: number;
  private msPer: number | undefined;

  constructor(private readonly opts: FlowOptions) {
    this.budgetReadings = opts.initial;
  }

  /** Readings the next request may carry. */
  get budget(): number {
    return Math.floor(this.budgetReadings);
  }

  /** Measured apply time per reading (moving average), ms; undefined before the first measurement. */
  get msPerReading(): number | undefined {
    return this.msPer;
  }

  /** The most readings the subscriber applies within targetMs at the measured rate. */
  private get rateCap(): number {
    return this.msPer === undefined || this.msPer <= 0 ? this.opts.max : this.opts.targetMs / this.msPer;
  }

  /** The subscriber applied `readings` in `ms` (one or more batches of one request). */
  applied(readings: number, ms: number): void {
    if (readings <= 0) return;
    const per = Math.max(ms, 0) / readings;
    this.msPer = this.msPer === undefined ? per : EWMA_WEIGHT * per + (1 - EWMA_WEIGHT) * this.msPer;
  }

  /** A request of `readings` was answered in time: grow slowly, within what the rate allows. */
  succeeded(readings: number): void {
    // Only a request that used most of the budget says the budget is not too small.
    const grown = readings >= this.budgetReadings / 2 ? this.budgetReadings * GROWTH : this.budgetReadings;
    this.budgetReadings = this.clamp(Math.min(grown, this.rateCap));
  }

  /** A request was not answered within its deadline (or the subscriber was still applying it). */
  timedOut(): void {
    this.budgetReadings = this.clamp(Math.min(this.budgetReadings / 2, this.rateCap));
  }

  /** The subscriber refused a request of `readings` as too large (413). */
  tooLarge(readings: number): void {
    this.budgetReadings = this.clamp(Math.min(this.budgetReadings, readings) / 2);
  }

  private clamp(x: number): number {
    return Math.max(this.opts.min, Math.min(this.opts.max, x));
  }
}
