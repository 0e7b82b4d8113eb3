// Load profiles and thresholds shared by the scripts.

/** Trend statistics every summary carries (p50 is `med`). */
export const TREND_STATS = ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'];

/**
 * The paper's load: one client sending `requests` queries one after the other (one VU), so each
 * round trip is measured without queueing behind another.
 */
export function paperScenario(requests, maxDuration) {
  return {
    paper: {
      executor: 'shared-iterations',
      vus: 1,
      iterations: requests,
      maxDuration,
    },
  };
}

/**
 * Pass/fail: no failed requests, every answer complete, and the queries' round trip p95 under
 * `rttP95Ms`. The bound must be below the request timeout, or it could never fail: a request
 * that hits the timeout counts as failed, not as slow.
 */
export function paperThresholds(rttP95Ms) {
  return {
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    edge_scenarios_rtt_ms: [`p(95)<${rttP95Ms}`],
  };
}
