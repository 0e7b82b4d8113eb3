/** What the integration tests of the scenarios share: why a test must skip, and what is left on the host (namespaces and interfaces: the lab's `leftovers`). */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hasCommand, readPcap, type PhaseTraffic } from '@syncmesh-edge/lab';
import { loadConfig } from '../../src/config.js';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

/** A mesh name for a test: MEASURE_TEST_PREFIX (else `defaultPrefix`) + the pid, 8 characters at most. */
export function testMeshName(defaultPrefix: string): string {
  const prefix = process.env['MEASURE_TEST_PREFIX'] ?? defaultPrefix;
  return `${prefix}${process.pid % 10 ** (8 - prefix.length)}`;
}

/** Why the test cannot run here (root, k6, the plot venv, toxiproxy, tcpdump), or false. */
export function missing(): string | false {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)';
  const cfg = loadConfig({});
  for (const [file, what] of [
    [cfg.k6Bin, 'k6 (make k6)'],
    [cfg.python, 'the plot venv (make scenarios-venv)'],
    [cfg.toxiproxyBin, 'toxiproxy (make tools)'],
  ] as const) {
    if (!existsSync(file)) return `needs ${what}: ${file}`;
  }
  if (!hasCommand('tcpdump')) return 'needs tcpdump (make tools)';
  return false;
}

/** Command lines of running processes that mention one of `needles`. */
export function processesMentioning(...needles: string[]): string[] {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => needles.some((n) => l.includes(n)));
}

/**
 * Every interface's packet and byte counts are the sums over its pcap file (re-read here), the
 * client's bytes are every IPv4 frame on the client's interface (when it was captured), and
 * the kernel dropped nothing.
 */
export function assertCountsFromPcaps(ph: PhaseTraffic, label: string): void {
  for (const iface of ph.interfaces) {
    const file = ph.pcap_files.find((f) => f.endsWith(`.${iface.iface}.pcap`));
    assert.ok(file && existsSync(file), `${label}: pcap of ${iface.iface} kept`);
    const packets = readPcap(file).packets;
    assert.equal(iface.packets, packets.length, `${label} ${iface.iface}: packet count from the pcap`);
    assert.equal(
      iface.bytes,
      packets.reduce((s, p) => s + p.len, 0),
      `${label} ${iface.iface}: bytes from the pcap`,
    );
  }
  const client = ph.interfaces.find((i) => i.kind === 'client');
  if (client) {
    const clientFile = ph.pcap_files.find((f) => f.endsWith(`.${client.iface}.pcap`))!;
    assert.equal(
      ph.client_bytes,
      readPcap(clientFile)
        .packets.filter((p) => p.src !== null)
        .reduce((s, p) => s + p.len, 0),
      `${label}: client bytes from the client's pcap`,
    );
  }
  assert.equal(ph.dropped_packets, 0, `${label}: no packet dropped`);
}

/** Each plot is a non-empty PNG in runDir. */
export function assertPngs(runDir: string, plots: readonly string[]): void {
  for (const p of plots) {
    const png = readFileSync(join(runDir, p));
    assert.ok(png.length > 1000, `${p} is not empty`);
    assert.deepEqual(png.subarray(0, 4), PNG_SIGNATURE, `${p} is a PNG`);
  }
}
