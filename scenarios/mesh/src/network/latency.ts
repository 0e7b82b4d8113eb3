/**
 * Link profiles: how long data takes on each directed node pair, as toxiproxy toxics.
 *
 *   none      no toxics
 *   site      one-way 1 or 2 ms per pair (fixed per pair), as between racks of one site
 *   regional  one-way round(5 ms + 0.1 ms/km x haversine distance) with 1 ms jitter, as between
 *             towns over a regional ISP (about ten times slower than light in fibre: routing,
 *             queues and last miles dominate)
 *   <file>    explicit values per pair from a JSON file (see README.md, "Latency files")
 *
 * Latency is one-way: a request/response on the A->B link waits 2 x latency.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { MeshError } from '../errors.js';
import { fnv1a, nodeId, parseNodeRef } from '../plan/plan.js';

export const REGIONAL_BASE_MS = 5;
export const REGIONAL_MS_PER_KM = 0.1;
export const REGIONAL_JITTER_MS = 1;
/** Extra delay of a "lost" segment: Linux's minimum TCP retransmission timeout. */
export const LOSS_RETRANSMIT_MS = 200;

/** The regional profile's one-way latency between two places (also the scenarios' central server's links). */
export function regionalLatency(a: Coordinates, b: Coordinates): { latencyMs: number; jitterMs: number } {
  return { latencyMs: Math.round(REGIONAL_BASE_MS + REGIONAL_MS_PER_KM * haversineKm(a, b)), jitterMs: REGIONAL_JITTER_MS };
}

export interface Coordinates {
  readonly lat: number;
  readonly lon: number;
}

/** What one direction of a directed link does to the data. */
export interface Shape {
  readonly latencyMs: number;
  readonly jitterMs: number;
  /** Rate limit in kbit/s, or null for none. */
  readonly bandwidthKbitS: number | null;
  /** Probability (0..1) that a chunk is delayed by a retransmission (LOSS_RETRANSMIT_MS). */
  readonly loss: number;
}

/** The two directions of the A->B link: upstream = A's data to B, downstream = B's answers. */
export interface LinkShape {
  readonly from: number;
  readonly to: number;
  readonly upstream: Shape;
  readonly downstream: Shape;
}

export const NO_SHAPE: Shape = Object.freeze({ latencyMs: 0, jitterMs: 0, bandwidthKbitS: null, loss: 0 });

export function haversineKm(a: Coordinates, b: Coordinates): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLon = (b.lon - a.lon) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371.0088 * Math.asin(Math.min(1, Math.sqrt(h)));
}

const shapeSchema = z
  .object({
    latency_ms: z.number().int().min(0).max(60_000).default(0),
    jitter_ms: z.number().int().min(0).max(60_000).default(0),
    bandwidth_kbit_s: z.number().int().positive().nullable().default(null),
    loss: z.number().min(0).max(1).default(0),
  })
  .strict();

const fileSchema = z
  .object({
    default: shapeSchema.optional(),
    links: z
      .array(
        shapeSchema.extend({
          from: z.string(),
          to: z.string(),
          symmetric: z.boolean().default(true),
        }),
      )
      .default([]),
  })
  .strict();

function toShape(s: z.infer<typeof shapeSchema>): Shape {
  return { latencyMs: s.latency_ms, jitterMs: s.jitter_ms, bandwidthKbitS: s.bandwidth_kbit_s, loss: s.loss };
}

export function isBuiltinProfile(profile: string): boolean {
  return profile === 'none' || profile === 'site' || profile === 'regional';
}

/** Checks a profile name or latency file before anything starts. */
export function validateProfile(profile: string, nodes: number): void {
  if (isBuiltinProfile(profile)) return;
  readLatencyFile(profile, nodes);
}

function readLatencyFile(path: string, nodes: number): Map<string, Shape> & { fallback: Shape } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new MeshError(
      'EDGE_MESH_LATENCY_FILE',
      `LATENCY '${path}' is neither none, site, regional nor a readable JSON latency file: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new MeshError('EDGE_MESH_LATENCY_FILE', `latency file ${path} is invalid: ${problems}`);
  }
  const out = new Map<string, Shape>() as Map<string, Shape> & { fallback: Shape };
  out.fallback = parsed.data.default ? toShape(parsed.data.default) : NO_SHAPE;
  for (const l of parsed.data.links) {
    const from = parseNodeRef(l.from);
    const to = parseNodeRef(l.to);
    for (const [ref, idx] of [
      [l.from, from],
      [l.to, to],
    ] as const) {
      if (idx === undefined || idx < 1 || idx > nodes) {
        throw new MeshError('EDGE_MESH_LATENCY_FILE', `latency file ${path}: '${ref}' is not a node of this ${nodes}-node mesh (node-1..node-${nodes})`);
      }
    }
    if (from === to) throw new MeshError('EDGE_MESH_LATENCY_FILE', `latency file ${path}: link ${l.from} -> ${l.to} goes nowhere`);
    const shape = toShape(l);
    out.set(`${from}>${to}`, shape);
    if (l.symmetric) out.set(`${to}>${from}`, shape);
  }
  return out;
}

/** One-way shape from `a` to `b` under a profile. */
function oneWay(profile: string, a: number, b: number, coords: ReadonlyMap<number, Coordinates>, file: ReturnType<typeof readLatencyFile> | null): Shape {
  if (file) return file.get(`${a}>${b}`) ?? file.fallback;
  switch (profile) {
    case 'none':
      return NO_SHAPE;
    case 'site': {
      const [lo, hi] = a < b ? [a, b] : [b, a];
      return { ...NO_SHAPE, latencyMs: 1 + (fnv1a(`${nodeId(lo)}~${nodeId(hi)}`) % 2) };
    }
    case 'regional': {
      const ca = coords.get(a);
      const cb = coords.get(b);
      if (!ca || !cb) throw new MeshError('EDGE_MESH_DATA', `no coordinates for ${nodeId(ca ? b : a)}; the regional profile needs every node's location`);
      return { ...NO_SHAPE, ...regionalLatency(ca, cb) };
    }
    default:
      throw new MeshError('EDGE_MESH_LATENCY_FILE', `unknown latency profile '${profile}'`);
  }
}

/** The shape of every directed link of an n-node mesh. */
export function linkShapes(profile: string, nodes: number, coords: ReadonlyMap<number, Coordinates>): LinkShape[] {
  const file = isBuiltinProfile(profile) ? null : readLatencyFile(profile, nodes);
  const out: LinkShape[] = [];
  for (let a = 1; a <= nodes; a++) {
    for (let b = 1; b <= nodes; b++) {
      if (a === b) continue;
      out.push({ from: a, to: b, upstream: oneWay(profile, a, b, coords, file), downstream: oneWay(profile, b, a, coords, file) });
    }
  }
  return out;
}

/** toxiproxy toxics for one direction ("upstream"/"downstream") of a link. */
export function toxicsFor(
  shape: Shape,
  stream: 'upstream' | 'downstream',
): { name: string; type: string; stream: string; toxicity: number; attributes: Record<string, number> }[] {
  const toxics: { name: string; type: string; stream: string; toxicity: number; attributes: Record<string, number> }[] = [];
  if (shape.latencyMs > 0 || shape.jitterMs > 0) {
    toxics.push({ name: `latency_${stream}`, type: 'latency', stream, toxicity: 1, attributes: { latency: shape.latencyMs, jitter: shape.jitterMs } });
  }
  if (shape.bandwidthKbitS !== null) {
    toxics.push({
      name: `bandwidth_${stream}`,
      type: 'bandwidth',
      stream,
      toxicity: 1,
      attributes: { rate: Math.max(1, Math.round(shape.bandwidthKbitS / 8)) },
    });
  }
  if (shape.loss > 0) {
    toxics.push({ name: `loss_${stream}`, type: 'latency', stream, toxicity: shape.loss, attributes: { latency: LOSS_RETRANSMIT_MS, jitter: 0 } });
  }
  return toxics;
}
