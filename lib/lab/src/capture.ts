/**
 * One measured phase's packet capture: `tcpdump -w` on every interface that matters (the host
 * side of the client's, every node's and the central server's veth, or the bridge the nodes are
 * on; in the network namespace that holds them when that is not the host's, e.g. libvirt's for
 * VMs: `ip netns exec <netns> tcpdump`), started before the phase and stopped after it, so phases are separated by the caller and
 * not by sleeps. The pcap files are the evidence; the numbers are computed from them (pcap.ts,
 * traffic.ts). Used by `make scenario`, `make mesh-capture` and the demo.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LabError } from './errors.js';
import { inNetns } from './netns.js';
import { readPcap } from './pcap.js';
import { classify, type CapturedInterface, type InterfaceKind, type Layout, type TrafficBreakdown } from './traffic.js';

/** Headers are enough: the wire length of every frame is in its pcap record. */
export const SNAPLEN_BYTES = 96;
const TCPDUMP_READY_TIMEOUT_MS = 10_000;
const TCPDUMP_STOP_TIMEOUT_MS = 10_000;

export interface CaptureTarget {
  iface: string;
  kind: InterfaceKind;
  node?: string;
  /** Network namespace holding the interface; absent: the host's. */
  netns?: string;
}

export interface PhaseTraffic extends TrafficBreakdown {
  phase: string;
  duration_ms: number;
  /** The pcap files the numbers were computed from. */
  pcap_files: string[];
  /** Packets tcpdump reported dropped by the kernel (0: the counts are complete). */
  dropped_packets: number;
  source: 'pcap';
}

export interface RunningCapture {
  stop(): Promise<PhaseTraffic>;
}

function where(t: CaptureTarget): string {
  return t.netns ? `${t.iface} (netns ${t.netns})` : t.iface;
}

/** Starts tcpdump on every target; resolves once all of them listen. */
export async function startCapture(phase: string, dir: string, targets: readonly CaptureTarget[], layout: Layout): Promise<RunningCapture> {
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const procs: { p: ChildProcess; t: CaptureTarget; file: string; exited: Promise<void>; dropped: number }[] = [];
  try {
    await Promise.all(
      targets.map(
        (t) =>
          new Promise<void>((ready, fail) => {
            const file = join(dir, `${phase}.${t.iface}.pcap`);
            const tcpdump = ['tcpdump', '-i', t.iface, '-w', file, '-s', String(SNAPLEN_BYTES), '-U', '-nn', '--immediate-mode'];
            // `ip netns exec` execs tcpdump in place: the pid (and so SIGINT on stop) is tcpdump's
            const argv = t.netns ? inNetns(t.netns, tcpdump) : tcpdump;
            const p = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
            const rec = { p, t, file, exited: new Promise<void>((r) => p.once('close', () => r())), dropped: 0 };
            procs.push(rec);
            const timer = setTimeout(
              () => fail(new LabError('EDGE_LAB_CAPTURE', `tcpdump on ${where(t)} did not start within ${TCPDUMP_READY_TIMEOUT_MS} ms`)),
              TCPDUMP_READY_TIMEOUT_MS,
            );
            let lastLine = '';
            createInterface({ input: p.stderr! }).on('line', (line) => {
              lastLine = line;
              if (/listening on/.test(line)) {
                clearTimeout(timer);
                ready();
              }
              const d = /(\d+) packets? dropped by kernel/.exec(line);
              if (d) rec.dropped += Number(d[1]);
            });
            p.once('error', (err) => {
              clearTimeout(timer);
              fail(new LabError('EDGE_LAB_TOOL_MISSING', `tcpdump cannot run (run: make tools): ${err.message}`, { cause: err }));
            });
            p.once('exit', (code) => {
              clearTimeout(timer);
              fail(new LabError('EDGE_LAB_CAPTURE', `tcpdump on ${where(t)} exited with ${code}: ${lastLine}`));
            });
          }),
      ),
    );
  } catch (err) {
    for (const r of procs) r.p.kill('SIGKILL');
    throw err;
  }
  let result: Promise<PhaseTraffic> | undefined;
  return {
    stop() {
      result ??= (async () => {
        const duration = Math.round(performance.now() - t0);
        for (const r of procs) r.p.kill('SIGINT');
        const killer = setTimeout(() => {
          for (const r of procs) r.p.kill('SIGKILL');
        }, TCPDUMP_STOP_TIMEOUT_MS);
        await Promise.all(procs.map((r) => r.exited));
        clearTimeout(killer);
        const captured: CapturedInterface[] = procs.map((r) => ({
          iface: r.t.iface,
          kind: r.t.kind,
          ...(r.t.node ? { node: r.t.node } : {}),
          packets: readPcap(r.file).packets,
        }));
        return {
          phase,
          duration_ms: duration,
          ...classify(layout, captured),
          pcap_files: procs.map((r) => r.file),
          dropped_packets: procs.reduce((s, r) => s + r.dropped, 0),
          source: 'pcap' as const,
        };
      })();
      return result;
    },
  };
}
