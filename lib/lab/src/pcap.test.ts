import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPcap, parsePcap, tcpFrame } from './pcap.js';
import { LabError } from './errors.js';

test('pcap - reads wire length, addresses and ports of every record', () => {
  const buf = buildPcap(
    [
      { ts: 1.5, frame: tcpFrame('10.1.2.11', 40000, '10.1.2.1', 20102, 100) },
      { ts: 2.25, frame: tcpFrame('10.1.2.1', 20102, '10.1.2.11', 40000, 1400), origLen: 1454 },
    ],
    96,
  );
  const f = parsePcap(buf);
  assert.equal(f.packets.length, 2);
  assert.deepEqual(f.packets[0], { ts: 1.5, len: 154, src: '10.1.2.11', dst: '10.1.2.1', sport: 40000, dport: 20102, proto: 'tcp' });
  // truncated to the snap length, the wire length still counts
  assert.equal(f.packets[1]!.len, 1454);
  assert.equal(f.packets[1]!.sport, 20102);
});

test('pcap - a truncated last record is ignored', () => {
  const buf = buildPcap([
    { ts: 1, frame: tcpFrame('10.0.0.1', 1, '10.0.0.2', 2, 10) },
    { ts: 2, frame: tcpFrame('10.0.0.1', 1, '10.0.0.2', 2, 10) },
  ]);
  assert.equal(parsePcap(buf.subarray(0, buf.length - 5)).packets.length, 1);
});

test('pcap - non-IPv4 frames count with null addresses', () => {
  const arp = Buffer.alloc(42);
  arp.writeUInt16BE(0x0806, 12);
  const p = parsePcap(buildPcap([{ ts: 1, frame: arp }])).packets[0]!;
  assert.equal(p.len, 42);
  assert.equal(p.src, null);
  assert.equal(p.proto, 'other');
});

test('pcap - rejects what is not a libpcap file', () => {
  assert.throws(
    () => parsePcap(Buffer.from('0a0d0d0a00000000000000000000000000000000000000000000', 'hex')),
    (e: unknown) => e instanceof LabError && e.code === 'EDGE_LAB_PCAP',
  );
  assert.throws(
    () => parsePcap(Buffer.alloc(3)),
    (e: unknown) => e instanceof LabError && e.code === 'EDGE_LAB_PCAP',
  );
});
