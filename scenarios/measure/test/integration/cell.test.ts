/**
 * One small cell end to end on a real emulated mesh (needs root, tcpdump, k6 and the plot venv:
 * `make test` installs them): 3 nodes, aggregate, 1 day, 5 requests, both systems. Checks that the
 * traffic numbers are sums over the packet captures (re-read here from the pcap files), that the
 * plots and the report exist, and that nothing is left behind.
 */
import { hostInfo } from '@syncmesh-edge/bench-kit';
import { leftovers } from '@syncmesh-edge/lab';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { runOnOneMesh, type CellResult } from '../../src/run.js';
import { writeResults } from '../../src/report.js';
import { assertCountsFromPcaps, assertPngs, missing, processesMentioning, testMeshName } from './support.js';

/** Generous: the mesh start dominates, and other work shares the 2 cores. */
const CELL_TIMEOUT_MS = 8 * 60_000;

test('scenario cell - 3 nodes, aggregate, 1 day, 5 requests: traffic from the captures, plots, report, nothing left behind', {
  skip: missing(),
  timeout: CELL_TIMEOUT_MS,
}, async () => {
  const mesh = testMeshName('smq'); // not smt: the Terraform scenarios' prefix
  const root = mkdtempSync(join(tmpdir(), 'scenario-test-'));
  try {
    const cfg = loadConfig({
      SCENARIO_MESH_NAME: mesh,
      SCENARIO_RESULTS_DIR: join(root, 'results'),
      SCENARIO_STATE_DIR: join(root, 'state'),
      SCENARIO_LATENCY: 'regional',
    });
    const runDir = join(cfg.resultsDir, 'test');
    const cells = (['syncmesh', 'baseline'] as const).map((system) => ({ system, nodes: 3, workload: 'aggregate' as const, days: 1, requests: 5 }));
    const results: CellResult[] = await runOnOneMesh(cfg, cells, runDir, () => undefined);
    const { plots } = writeResults(
      cfg,
      runDir,
      { run: 'test', started_at: '', finished_at: '', latency: 'regional', host: { ...hostInfo(), note: 'test' }, duration_s: 0 },
      results,
    );

    assert.equal(results.length, 2);
    for (const r of results) {
      const phases = [r.traffic.query, ...(r.traffic.ingest ? [r.traffic.ingest] : [])];
      for (const ph of phases) {
        assert.equal(ph.source, 'pcap');
        assert.ok(ph.pcap_files.length >= 4, `${r.id} ${ph.phase}: one pcap per interface`);
        assertCountsFromPcaps(ph, r.id);
      }
      assert.ok(r.traffic.query.client_bytes > 0, `${r.id}: the client's queries were captured`);
      assert.equal(r.traffic.total_bytes, (r.traffic.ingest?.counted_bytes ?? 0) + r.traffic.query.counted_bytes);
      assert.equal(r.thresholds_ok, true, `${r.id}: k6 thresholds (see ${r.files.k6_log})`);
      assert.ok(r.rtt_ms.p50 > 0 && r.rtt_ms.p95 >= r.rtt_ms.p50);
      assert.equal(r.nodes_answered, r.system === 'syncmesh' ? 3 : 1);
    }
    const sm = results.find((r) => r.system === 'syncmesh')!;
    const bl = results.find((r) => r.system === 'baseline')!;
    assert.ok(sm.traffic.query.node_node_bytes > 0, 'node-1 asked its peers over their links');
    assert.deepEqual(
      sm.traffic.query.pairs.map((p) => `${p.from}>${p.to}`),
      ['node-1>node-2', 'node-1>node-3'],
    );
    assert.equal(bl.traffic.ingest!.node_central_bytes > 1_000_000, true, 'three sensor-months crossed the node->central links');
    assert.ok(bl.traffic.ingest!.central_seen_bytes > 0, 'the central interface saw the ingest too');
    assert.ok(sm.traffic.total_bytes < bl.traffic.total_bytes);
    assert.ok(bl.db_ms.entry && bl.db_ms.entry.p50 > 0, 'the central database time is reported');
    assert.ok(sm.db_ms.slowest_peer && sm.db_ms.slowest_peer.p50 > 0, 'the peers database time is reported');

    for (const f of ['results.json', 'results.csv', 'report.md']) assert.ok(statSync(join(runDir, f)).size > 0, f);
    assert.deepEqual(plots, ['traffic.png', 'rtt.png']);
    assertPngs(runDir, plots);
    assert.match(readFileSync(join(runDir, 'report.md'), 'utf8'), /34\.74/);
    assert.equal(readFileSync(join(runDir, 'results.csv'), 'utf8').trim().split('\n').length, 3);

    assert.deepEqual((await leftovers(mesh)).netns, [], 'no namespaces left');
    assert.deepEqual((await leftovers(mesh)).links, [], 'no interfaces left');
    assert.deepEqual(processesMentioning(`${mesh}-`, root), [], 'no processes left (tcpdump, k6, servers)');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
