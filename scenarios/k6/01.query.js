// 01.query: the Syncmesh paper's benchmark request, sent REQUESTS times by one client to the
// first of NODE_URLS, with round trip, the nodes' own database time and the answer size per
// request. Runs against the local emulated mesh (make scenario) and against a real mesh:
//
//   k6 run --no-usage-report -e NODE_URLS=http://10.0.0.2:8080/function/syncmesh-fn,http://10.0.0.3:8080/function/syncmesh-fn \
//     -e FORWARD=external -e WORKLOAD=aggregate -e DAYS=1 -e REQUESTS=20 scenarios/k6/01.query.js
//
// FORWARD: registry (the entry node asks the nodes in its registry, optionally within RADIUS_KM),
// external (the entry node asks the other NODE_URLS, as the original benchmark did), none (the
// node answers alone: the baseline's central server).
import http from 'k6/http';
import { check, fail } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { paperThresholds, TREND_STATS, paperScenario } from './lib/options.js';
import { entryAndPeers, healthUrl, maxOverNodes, queryBody } from './lib/syncmesh.js';

const NODE_URLS = __ENV.NODE_URLS || 'http://localhost:8080/function/syncmesh-fn';
const WORKLOAD = __ENV.WORKLOAD || 'aggregate'; // collect | aggregate
const DAYS = Number(__ENV.DAYS || 1); // 1, 7, 14, 30
const START = __ENV.START || '2017-07-01T00:00:00Z';
const REQUESTS = Number(__ENV.REQUESTS || 20); // 20, 40, 80
const FORWARD = __ENV.FORWARD || 'registry'; // registry | external | none
const RADIUS_KM = __ENV.RADIUS_KM ? Number(__ENV.RADIUS_KM) : undefined;
// nodes that must answer each request (registry mode cannot know it from NODE_URLS)
const EXPECT_NODES = __ENV.EXPECT_NODES ? Number(__ENV.EXPECT_NODES) : undefined;
const ACCEPT_GZIP = (__ENV.ACCEPT_GZIP || 'true') === 'true';
const REQUEST_TIMEOUT = __ENV.REQUEST_TIMEOUT || '120s';
// pass/fail bound on the queries' round-trip p95, ms (must stay below REQUEST_TIMEOUT to be able to fail)
const RTT_P95_MS = Number(__ENV.RTT_P95_MS || 10000);
const MAX_DURATION = __ENV.MAX_DURATION || '30m';
const SUMMARY_PATH = __ENV.SUMMARY_PATH || 'summary.json';

if (!['collect', 'aggregate'].includes(WORKLOAD)) throw new Error(`WORKLOAD must be collect or aggregate, not '${WORKLOAD}'`);
if (!['registry', 'external', 'none'].includes(FORWARD)) throw new Error(`FORWARD must be registry, external or none, not '${FORWARD}'`);
if (!(DAYS > 0) || !(REQUESTS > 0)) throw new Error('DAYS and REQUESTS must be positive numbers');
if (!(RTT_P95_MS > 0)) throw new Error(`RTT_P95_MS must be a positive number of ms, not '${__ENV.RTT_P95_MS}'`);

const { entry, peers } = entryAndPeers(NODE_URLS);
const BODY = JSON.stringify(queryBody({ workload: WORKLOAD, start: START, days: DAYS, forward: FORWARD, radiusKm: RADIUS_KM, peers }));
const HEADERS = { 'Content-Type': 'application/json', ...(ACCEPT_GZIP ? { 'Accept-Encoding': 'gzip' } : {}) };

const rttMs = new Trend('edge_scenarios_rtt_ms', true); // round trip of the queries only (not setup's health check)
const nonDbMs = new Trend('edge_scenarios_non_db_ms', true); // per request: round trip minus its slowest database time (network, functions, merge)
const serverMs = new Trend('edge_scenarios_server_ms', true); // entry node's own handling time
const entryDbMs = new Trend('edge_scenarios_entry_db_ms', true); // entry node's database time
const peerDbMs = new Trend('edge_scenarios_peer_db_ms', true); // slowest peer's database time
const peerMs = new Trend('edge_scenarios_peer_ms', true); // slowest peer's round trip from the entry node
const resultItems = new Trend('edge_scenarios_result_items'); // readings (collect) or elements (aggregate) answered
const answered = new Trend('edge_scenarios_nodes_answered'); // nodes that answered, entry included
const responseBytes = new Counter('edge_scenarios_response_bytes'); // answer bodies after decompression

export const options = {
  scenarios: paperScenario(REQUESTS, MAX_DURATION),
  thresholds: paperThresholds(RTT_P95_MS),
  summaryTrendStats: TREND_STATS,
};

export function setup() {
  const res = http.get(healthUrl(entry), { timeout: '10s', tags: { kind: 'setup' } });
  if (res.status !== 200) fail(`Got unexpected status code ${res.status} from ${healthUrl(entry)} when trying to setup. Exiting.`);
}

export default function () {
  const res = http.post(entry, BODY, { headers: HEADERS, timeout: REQUEST_TIMEOUT, tags: { kind: 'query', workload: WORKLOAD } });
  let answer = null;
  try {
    answer = res.json();
  } catch (_) {
    answer = null; // counted by the check below
  }
  const ext = answer?.extensions || {};
  const items = answer?.data && Array.isArray(answer.data.sensors) ? answer.data.sensors.length : -1;
  const nodesAnswered = typeof ext.answered === 'number' ? ext.answered : 1;
  check(res, {
    'status is 200': (r) => r.status === 200,
    'answer has data and no errors': () => answer?.data && !answer.errors?.length,
    'every node answered': () => !ext.partial && (EXPECT_NODES === undefined || nodesAnswered === EXPECT_NODES),
  });
  rttMs.add(res.timings.duration);
  responseBytes.add(res.body ? res.body.length : 0);
  if (ext.timing) {
    serverMs.add(ext.timing.ms);
    entryDbMs.add(ext.timing.db_ms);
    nonDbMs.add(res.timings.duration - Math.max(ext.timing.db_ms, maxOverNodes(ext, 'db_ms')));
  }
  peerDbMs.add(maxOverNodes(ext, 'db_ms'));
  peerMs.add(maxOverNodes(ext, 'ms'));
  resultItems.add(items);
  answered.add(nodesAnswered);
}

export function handleSummary(data) {
  const d = data.metrics.edge_scenarios_rtt_ms ? data.metrics.edge_scenarios_rtt_ms.values : {};
  const line = `01.query ${WORKLOAD} ${DAYS}d x${REQUESTS} -> ${entry}: p50 ${Number(d.med).toFixed(1)} ms, p95 ${Number(d['p(95)']).toFixed(1)} ms, max ${Number(d.max).toFixed(1)} ms\n`;
  return { [SUMMARY_PATH]: JSON.stringify(data, null, 2), stdout: line };
}
