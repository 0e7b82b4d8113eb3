import { createHash } from 'node:crypto';
import { CrdtError } from './errors.js';
import { ewflag } from './ewflag.js';
import { gcounter } from './gcounter.js';
import { gset } from './gset.js';
import { lwwregister } from './lwwregister.js';
import { mvregister } from './mvregister.js';
import { ormap } from './ormap.js';
import { orset } from './orset.js';
import { pncounter } from './pncounter.js';
import { CRDT_TYPE_NAMES, type CrdtType, type CrdtTypeName } from './types.js';

/** Any CRDT type: the registry is heterogeneous by design (states are handled opaquely). */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds types of different state shapes
type SomeCrdtType = CrdtType<any, any, any>;

export const crdtTypes: Readonly<Record<CrdtTypeName, SomeCrdtType>> = Object.freeze({
  ewflag,
  gcounter,
  pncounter,
  gset,
  mvregister,
  orset,
  lwwregister,
  ormap,
});

export function isCrdtTypeName(name: unknown): name is CrdtTypeName {
  return typeof name === 'string' && (CRDT_TYPE_NAMES as readonly string[]).includes(name);
}

/** Looks a type up by name; throws CrdtError('EDGE_MISO_UNKNOWN_TYPE') listing the allowed names. */
export function getCrdtType(name: string): SomeCrdtType {
  if (!isCrdtTypeName(name)) {
    throw new CrdtError('EDGE_MISO_UNKNOWN_TYPE', `unknown CRDT type ${JSON.stringify(name)}; allowed: ${CRDT_TYPE_NAMES.join(', ')}`);
  }
  return crdtTypes[name];
}

/** Hex SHA-256 of encode(state): equal digests mean equal states (anti-entropy). */
export function digest(type: CrdtTypeName | SomeCrdtType, state: unknown): string {
  const t = typeof type === 'string' ? getCrdtType(type) : type;
  return createHash('sha256').update(t.encode(state)).digest('hex');
}
