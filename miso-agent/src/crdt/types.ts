/** The names of the CRDT types the core implements (the registry keys). */
export type CrdtTypeName = 'ewflag' | 'gcounter' | 'pncounter' | 'gset' | 'mvregister' | 'orset' | 'lwwregister' | 'ormap';

export const CRDT_TYPE_NAMES: readonly CrdtTypeName[] = ['ewflag', 'gcounter', 'pncounter', 'gset', 'mvregister', 'orset', 'lwwregister', 'ormap'];

/** A plain JSON value (what value() returns and what ops carry). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON scalar: the element type of gset and orset. */
export type JsonScalar = null | boolean | number | string;

/**
 * A delta-state CRDT (Almeida et al., "Delta State Replicated Data Types").
 * A delta is an element of the same lattice as the state, so one `join`
 * merges states into states, deltas into states and deltas into delta groups.
 */
export interface CrdtType<S, Op, V> {
  readonly name: CrdtTypeName;
  /** The bottom element of the lattice. */
  empty(): S;
  /** Validates an untrusted op (from gRPC/JSON). Throws CrdtError('EDGE_MISO_BAD_OP') naming what is wrong. */
  parseOp(op: unknown): Op;
  /**
   * Applies a local op on replica `replica` (a stable string id), returns
   * [newState, delta] with newState = join(state, delta). Pure. Validates `op`
   * itself too, so unparsed ops are safe.
   */
  apply(state: S, op: Op, replica: string): [S, S];
  /** Least upper bound: commutative, associative, idempotent. */
  join(a: S, b: S): S;
  /** The user-visible value as plain JSON (arrays sorted by canonical JSON). */
  value(state: S): V;
  equals(a: S, b: S): boolean;
  /** Deterministic, versioned binary encoding (byte 0 = format version, byte 1 = type tag). */
  encode(state: S): Uint8Array;
  /** Strict inverse of encode(); throws CrdtError('EDGE_MISO_BAD_ENCODING') on anything else. */
  decode(bytes: Uint8Array): S;
}
