/** @syncmesh-edge/prometheus: reading the services' /metrics (Prometheus text format). */
export { metricValue, parseMetrics, PrometheusParseError, selectSamples } from './parse.js';
export type { Sample } from './parse.js';
