/**
 * A reader for the classic libpcap files tcpdump writes (`-w`): every packet's capture time,
 * wire length and IPv4/TCP/UDP addressing. Traffic numbers are sums of wire lengths
 * (`orig_len`: the whole Ethernet frame as it crossed the link, without FCS), so a small snap
 * length loses nothing.
 */
import { readFileSync } from 'node:fs';
import { LabError } from './errors.js';

/** Link types we can decode (pcap LINKTYPE_*). */
export const LINKTYPE_ETHERNET = 1;
export const LINKTYPE_LINUX_SLL = 113;

const GLOBAL_HEADER_BYTES = 24;
const RECORD_HEADER_BYTES = 16;
const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_VLAN = 0x8100;
const IPPROTO_TCP = 6;
const IPPROTO_UDP = 17;

export interface Packet {
  /** Capture time in seconds since the epoch. */
  ts: number;
  /** Bytes on the wire (the frame's original length). */
  len: number;
  /** IPv4 addresses, or null for non-IPv4 frames (ARP etc.). */
  src: string | null;
  dst: string | null;
  /** TCP/UDP ports, or null. */
  sport: number | null;
  dport: number | null;
  proto: 'tcp' | 'udp' | 'other';
}

export interface PcapFile {
  linkType: number;
  snapLen: number;
  packets: Packet[];
}

function ipv4(buf: Buffer, at: number): string {
  return `${buf[at]}.${buf[at + 1]}.${buf[at + 2]}.${buf[at + 3]}`;
}

/** Decodes an Ethernet (or Linux cooked) frame's IPv4 header and ports, as far as captured. */
function decode(frame: Buffer, linkType: number): Pick<Packet, 'src' | 'dst' | 'sport' | 'dport' | 'proto'> {
  const none = { src: null, dst: null, sport: null, dport: null, proto: 'other' as const };
  let off: number;
  let etherType: number;
  if (linkType === LINKTYPE_ETHERNET) {
    if (frame.length < 14) return none;
    etherType = frame.readUInt16BE(12);
    off = 14;
    if (etherType === ETHERTYPE_VLAN && frame.length >= 18) {
      etherType = frame.readUInt16BE(16);
      off = 18;
    }
  } else {
    if (frame.length < 16) return none;
    etherType = frame.readUInt16BE(14);
    off = 16;
  }
  if (etherType !== ETHERTYPE_IPV4 || frame.length < off + 20) return none;
  const ihl = (frame[off]! & 0x0f) * 4;
  const protoNum = frame[off + 9]!;
  const src = ipv4(frame, off + 12);
  const dst = ipv4(frame, off + 16);
  const l4 = off + ihl;
  const proto = protoNum === IPPROTO_TCP ? 'tcp' : protoNum === IPPROTO_UDP ? 'udp' : 'other';
  if (proto !== 'other' && frame.length >= l4 + 4) {
    return { src, dst, sport: frame.readUInt16BE(l4), dport: frame.readUInt16BE(l4 + 2), proto };
  }
  return { src, dst, sport: null, dport: null, proto };
}

/** Parses a pcap file's bytes. Throws EDGE_LAB_PCAP on anything that is not a pcap we read. */
export function parsePcap(buf: Buffer, name = 'pcap'): PcapFile {
  if (buf.length < GLOBAL_HEADER_BYTES) throw new LabError('EDGE_LAB_PCAP', `${name} is ${buf.length} bytes, shorter than a pcap header`);
  const magicLE = buf.readUInt32LE(0);
  let le: boolean;
  let nano: boolean;
  if (magicLE === 0xa1b2c3d4 || magicLE === 0xa1b23c4d) {
    le = true;
    nano = magicLE === 0xa1b23c4d;
  } else if (buf.readUInt32BE(0) === 0xa1b2c3d4 || buf.readUInt32BE(0) === 0xa1b23c4d) {
    le = false;
    nano = buf.readUInt32BE(0) === 0xa1b23c4d;
  } else {
    throw new LabError('EDGE_LAB_PCAP', `${name} is not a libpcap file (magic 0x${magicLE.toString(16)}); pcapng is not supported, capture with tcpdump -w`);
  }
  const u32 = (at: number) => (le ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
  const snapLen = u32(16);
  const linkType = u32(20) & 0x0fffffff;
  if (linkType !== LINKTYPE_ETHERNET && linkType !== LINKTYPE_LINUX_SLL) {
    throw new LabError('EDGE_LAB_PCAP', `${name} has link type ${linkType}; only Ethernet (1) and Linux cooked (113) are read`);
  }
  const packets: Packet[] = [];
  let at = GLOBAL_HEADER_BYTES;
  // a capture stopped with SIGINT ends on a whole record; a truncated last record is ignored
  while (at + RECORD_HEADER_BYTES <= buf.length) {
    const sec = u32(at);
    const frac = u32(at + 4);
    const incl = u32(at + 8);
    const orig = u32(at + 12);
    const start = at + RECORD_HEADER_BYTES;
    if (start + incl > buf.length) break;
    const frame = buf.subarray(start, start + incl);
    packets.push({ ts: sec + frac / (nano ? 1e9 : 1e6), len: orig, ...decode(frame, linkType) });
    at = start + incl;
  }
  return { linkType, snapLen, packets };
}

export function readPcap(path: string): PcapFile {
  return parsePcap(readFileSync(path), path);
}

/** Builds a pcap file (Ethernet, microseconds); tests use it to check the reader. */
export function buildPcap(frames: { ts: number; frame: Buffer; origLen?: number }[], snapLen = 65535): Buffer {
  const header = Buffer.alloc(GLOBAL_HEADER_BYTES);
  header.writeUInt32LE(0xa1b2c3d4, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeUInt32LE(snapLen, 16);
  header.writeUInt32LE(LINKTYPE_ETHERNET, 20);
  const parts: Buffer[] = [header];
  for (const f of frames) {
    const rec = Buffer.alloc(RECORD_HEADER_BYTES);
    const sec = Math.floor(f.ts);
    rec.writeUInt32LE(sec, 0);
    rec.writeUInt32LE(Math.round((f.ts - sec) * 1e6), 4);
    const incl = Math.min(f.frame.length, snapLen);
    rec.writeUInt32LE(incl, 8);
    rec.writeUInt32LE(f.origLen ?? f.frame.length, 12);
    parts.push(rec, f.frame.subarray(0, incl));
  }
  return Buffer.concat(parts);
}

/** An Ethernet + IPv4 + TCP frame of `payloadBytes` payload (for tests). */
export function tcpFrame(src: string, sport: number, dst: string, dport: number, payloadBytes = 0): Buffer {
  const frame = Buffer.alloc(14 + 20 + 20 + payloadBytes);
  frame.writeUInt16BE(ETHERTYPE_IPV4, 12);
  frame[14] = 0x45;
  frame.writeUInt16BE(20 + 20 + payloadBytes, 16);
  frame[14 + 9] = IPPROTO_TCP;
  for (const [i, o] of src.split('.').entries()) frame[14 + 12 + i] = Number(o);
  for (const [i, o] of dst.split('.').entries()) frame[14 + 16 + i] = Number(o);
  frame.writeUInt16BE(sport, 34);
  frame.writeUInt16BE(dport, 36);
  frame[34 + 12] = 0x50;
  return frame;
}
