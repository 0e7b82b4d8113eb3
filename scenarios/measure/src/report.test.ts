import { hostInfo } from '@syncmesh-edge/bench-kit';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTargets, CSV_COLUMNS, markdownReport, toCsv } from './report.js';
import type { CellResult } from './run.js';
import { emptyBreakdown } from '@syncmesh-edge/lab';

function cell(system: 'baseline' | 'syncmesh', workload: 'collect' | 'aggregate', totalBytes: number, rttP50: number): CellResult {
  const st = (x: number) => ({ p50: x, p95: x, max: x, avg: x, min: x });
  const phase = {
    ...emptyBreakdown(),
    counted_bytes: totalBytes,
    client_bytes: totalBytes,
    phase: 'query',
    duration_ms: 1,
    pcap_files: [],
    dropped_packets: 0,
    source: 'pcap' as const,
  };
  const usage = {
    interval_ms: 500,
    duration_ms: 1000,
    processes: [],
    roles: [{ role: 'k6', processes: 1, cpu_s: 0.5, cpu_pct: 50, rss_max_mb: 40, rss_total_max_mb: 40 }],
  };
  return {
    id: `${system}-n3-${workload}-d1-r20`,
    system,
    nodes: 3,
    workload,
    days: 1,
    requests: 20,
    latency: 'regional',
    radius_km: null,
    entry: 'http://x',
    forward: system === 'baseline' ? 'none' : 'external',
    warmup_requests: 1,
    started_at: '',
    traffic: { ingest: null, query: phase, total_bytes: totalBytes, ingest_readings: null, ingest_ms: null, note: '' },
    rtt_ms: st(rttP50),
    db_ms: { entry: st(10), slowest_peer: system === 'syncmesh' ? st(12) : null },
    server_ms: st(rttP50 - 1),
    non_db_ms: st(rttP50 - 12),
    result_items: 1,
    nodes_answered: system === 'syncmesh' ? 3 : 1,
    checks_rate: 1,
    http_failed_rate: 0,
    thresholds_ok: true,
    k6_duration_ms: 1000,
    resources: { query: usage, ingest: null },
    files: { dir: '', k6_summary: '', k6_log: '' },
  };
}

test('report - targets are checked per cell pair on the regional profile', () => {
  const checks = checkTargets([
    cell('baseline', 'aggregate', 10_000_000, 100),
    cell('syncmesh', 'aggregate', 150_000, 131),
    cell('baseline', 'collect', 10_000_000, 100),
    cell('syncmesh', 'collect', 8_600_000, 90),
  ]);
  assert.deepEqual(
    checks.map((c) => [c.target, c.met]),
    [
      ['aggregate traffic <= 2 % of baseline', true],
      ['aggregate RTT (p50) <= baseline', false],
      ['collect traffic <= baseline', true],
    ],
  );
  assert.match(checks[1]!.ours, /\+31 %/);
  assert.equal(checks[0]!.paper, '1.6 % (0.56 vs 34.74 MB)');
});

test('report - one CSV row per cell, every column filled', () => {
  const lines = toCsv([cell('baseline', 'aggregate', 1000, 10), cell('syncmesh', 'aggregate', 10, 12)])
    .trim()
    .split('\n');
  assert.equal(lines.length, 3);
  assert.equal(lines[0], CSV_COLUMNS.join(','));
  for (const l of lines.slice(1)) assert.equal(l.split(',').length, CSV_COLUMNS.length);
});

test('report - the markdown puts the paper beside ours and marks what we do not have', () => {
  const md = markdownReport(
    { run: 'r', started_at: 'a', finished_at: 'b', latency: 'regional', host: { ...hostInfo(), note: 'n' }, duration_s: 1 },
    [cell('baseline', 'aggregate', 1000, 10), cell('syncmesh', 'aggregate', 10, 12)],
    ['traffic.png'],
  );
  assert.match(md, /34\.74/);
  assert.match(md, /unavailable/);
  assert.match(md, /mongos/);
  assert.match(md, /without indexes/);
  assert.match(md, /!\[traffic\.png\]\(traffic\.png\)/);
});
