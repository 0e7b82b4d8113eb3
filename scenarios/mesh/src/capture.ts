/**
 * Bytes on the wire per node link and direction, from tcpdump on the host side of every node's
 * link (netns mode) or on loopback filtered to the mesh's ports (loopback mode). Traffic is
 * attributed the same way in both modes: "out" is what the node sent, "in" what it received,
 * and node-to-node requests are also counted per directed pair by their proxy port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { MeshError } from './errors.js';
import type { MeshPlan } from './plan.js';

/** Wait this long for tcpdump to report that it listens. */
const TCPDUMP_READY_TIMEOUT_MS = 10_000;
/** Headers are enough: frame length is printed for every packet. */
const SNAPLEN_BYTES = 128;

export interface LinkBytes {
  node: string;
  interface: string;
  bytes_out: number;
  bytes_in: number;
  packets_out: number;
  packets_in: number;
}

export interface PairBytes {
  from: string;
  to: string;
  /** What `from` sent on the link to `to` (requests). */
  bytes_request: number;
  /** What came back (answers). */
  bytes_response: number;
}

export interface CaptureResult {
  mesh: string;
  duration_ms: number;
  links: LinkBytes[];
  pairs: PairBytes[];
  total_bytes: number;
  /** Packets tcpdump reported as dropped by the kernel (0 means the counts are complete). */
  dropped_packets: number;
}

const PACKET_RE = /length (\d+): (\d+\.\d+\.\d+\.\d+)\.(\d+) > (\d+\.\d+\.\d+\.\d+)\.(\d+)/;

interface Counters {
  links: Map<string, LinkBytes>;
  pairs: Map<string, PairBytes>;
}

/** Attributes one packet seen on `iface` (node index `onNode`, or null on loopback). */
export function account(plan: MeshPlan, c: Counters, onNode: number | null, line: string): void {
  const m = PACKET_RE.exec(line);
  if (!m) return;
  const len = Number(m[1]);
  const src = { addr: m[2]!, port: Number(m[3]) };
  const dst = { addr: m[4]!, port: Number(m[5]) };
  const linkOf = (idx: number) => c.links.get(plan.nodes[idx - 1]!.id)!;
  const proxyByPort = (ep: { addr: string; port: number }) => plan.links.find((l) => l.listenHost === ep.addr && l.listenPort === ep.port);
  const fnByPort = (ep: { addr: string; port: number }) => plan.nodes.find((n) => n.addr === ep.addr && n.functionPort === ep.port);

  const outProxy = proxyByPort(dst); // node -> its proxy to a peer
  const inProxy = proxyByPort(src); // proxy -> node (answer from a peer)
  if (outProxy) bump(c, outProxy.from, outProxy.to, 'request', len);
  if (inProxy) bump(c, inProxy.from, inProxy.to, 'response', len);

  if (onNode !== null) {
    const node = plan.nodes[onNode - 1]!;
    const l = linkOf(onNode);
    if (src.addr === node.addr) {
      l.bytes_out += len;
      l.packets_out++;
    } else {
      l.bytes_in += len;
      l.packets_in++;
    }
    return;
  }
  // loopback: find the node at either end by its ports
  const sender = outProxy ? outProxy.from : fnByPort(src)?.index;
  const receiver = inProxy ? inProxy.from : fnByPort(dst)?.index;
  if (sender !== undefined) {
    linkOf(sender).bytes_out += len;
    linkOf(sender).packets_out++;
  }
  if (receiver !== undefined) {
    linkOf(receiver).bytes_in += len;
    linkOf(receiver).packets_in++;
  }
}

function bump(c: Counters, from: number, to: number, kind: 'request' | 'response', len: number): void {
  const key = `${from}>${to}`;
  let p = c.pairs.get(key);
  if (!p) {
    p = { from: `node-${from}`, to: `node-${to}`, bytes_request: 0, bytes_response: 0 };
    c.pairs.set(key, p);
  }
  if (kind === 'request') p.bytes_request += len;
  else p.bytes_response += len;
}

export interface Capture {
  /** Stops tcpdump and returns the counts. Safe to call twice. */
  stop(): Promise<CaptureResult>;
}

/** Starts tcpdump on every node link; resolves once all of them listen. */
export async function startCapture(plan: MeshPlan): Promise<Capture> {
  const counters: Counters = {
    links: new Map(plan.nodes.map((n) => [n.id, { node: n.id, interface: n.hostIf ?? 'lo', bytes_out: 0, bytes_in: 0, packets_out: 0, packets_in: 0 }])),
    pairs: new Map(),
  };
  const targets: { iface: string; node: number | null; filter: string[] }[] =
    plan.isolation === 'netns'
      ? plan.nodes.map((n) => ({ iface: n.hostIf!, node: n.index, filter: [] }))
      : [
          {
            iface: 'lo',
            node: null,
            filter: [
              'tcp',
              'and',
              'portrange',
              `${plan.portBase! + 1}-${plan.portBase! + 99}`,
              'or',
              'portrange',
              `${plan.portBase! + 1000}-${plan.portBase! + 1999}`,
            ],
          },
        ];
  const t0 = performance.now();
  let dropped = 0;
  const procs: ChildProcess[] = [];
  const exited: Promise<void>[] = [];
  try {
    await Promise.all(
      targets.map(
        (t) =>
          new Promise<void>((ready, fail) => {
            const p = spawn('tcpdump', ['-i', t.iface, '--immediate-mode', '-nn', '-e', '-l', '-q', '-s', String(SNAPLEN_BYTES), ...t.filter], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
            procs.push(p);
            exited.push(new Promise((r) => p.once('close', () => r())));
            createInterface({ input: p.stdout! }).on('line', (line) => account(plan, counters, t.node, line));
            const timer = setTimeout(
              () => fail(new MeshError('EDGE_MESH_COMMAND_FAILED', `tcpdump on ${t.iface} did not start within ${TCPDUMP_READY_TIMEOUT_MS} ms`)),
              TCPDUMP_READY_TIMEOUT_MS,
            );
            createInterface({ input: p.stderr! }).on('line', (line) => {
              if (/listening on/.test(line)) {
                clearTimeout(timer);
                ready();
              }
              const d = /(\d+) packets? dropped by kernel/.exec(line);
              if (d) dropped += Number(d[1]);
            });
            p.once('error', (err) => {
              clearTimeout(timer);
              fail(new MeshError('EDGE_MESH_TOOL_MISSING', `tcpdump cannot run (run: make tools): ${err.message}`, { cause: err }));
            });
            p.once('exit', (code) => {
              clearTimeout(timer);
              fail(new MeshError('EDGE_MESH_COMMAND_FAILED', `tcpdump on ${t.iface} exited with ${code}`));
            });
          }),
      ),
    );
  } catch (err) {
    for (const p of procs) p.kill('SIGTERM');
    throw err;
  }
  let result: Promise<CaptureResult> | undefined;
  return {
    stop() {
      result ??= (async () => {
        for (const p of procs) p.kill('SIGINT');
        await Promise.all(exited);
        const links = [...counters.links.values()];
        const pairs = [...counters.pairs.values()].sort(
          (a, b) => a.from.localeCompare(b.from, 'en', { numeric: true }) || a.to.localeCompare(b.to, 'en', { numeric: true }),
        );
        const total = plan.isolation === 'netns' ? links.reduce((s, l) => s + l.bytes_in + l.bytes_out, 0) : links.reduce((s, l) => s + l.bytes_out, 0);
        return { mesh: plan.name, duration_ms: Math.round(performance.now() - t0), links, pairs, total_bytes: total, dropped_packets: dropped };
      })();
      return result;
    },
  };
}
