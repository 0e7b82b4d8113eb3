/**
 * The pure CRDT core of the MISO agent: delta-state CRDTs with one join, JSON
 * ops, deterministic versioned encodings. No I/O, no timers, no clocks.
 * Design notes: miso-agent/INTERNALS.md.
 */
export type { CrdtType, CrdtTypeName, Json, JsonScalar } from './types.js';
export { CRDT_TYPE_NAMES } from './types.js';
export { CrdtError, CRDT_ERROR_CODES, isCrdtError } from './errors.js';
export type { CrdtErrorCode } from './errors.js';
export { MAX_VALUE_BYTES, MAX_VALUE_DEPTH, MAX_ID_BYTES, canonicalJson } from './json.js';
export { ENCODING_VERSION, TYPE_TAGS } from './codec.js';
export { crdtTypes, getCrdtType, isCrdtTypeName, digest } from './registry.js';
export type { Dot, CausalContext, DotFun, DotMap } from './dots.js';
export { ewflag } from './ewflag.js';
export type { EWFlagState, EWFlagOp } from './ewflag.js';
export { gcounter } from './gcounter.js';
export type { GCounterState, GCounterOp } from './gcounter.js';
export { pncounter } from './pncounter.js';
export type { PNCounterState, PNCounterOp } from './pncounter.js';
export { gset } from './gset.js';
export type { GSetState, GSetOp } from './gset.js';
export { mvregister } from './mvregister.js';
export type { MVRegisterState, MVRegisterOp } from './mvregister.js';
export { orset } from './orset.js';
export type { ORSetState, ORSetOp } from './orset.js';
export { lwwregister, hlcNext } from './lwwregister.js';
export type { LWWRegisterState, LWWRegisterOp, LWWWrite } from './lwwregister.js';
export { ormap } from './ormap.js';
export type { ORMapState, ORMapOp, ORMapValue } from './ormap.js';
