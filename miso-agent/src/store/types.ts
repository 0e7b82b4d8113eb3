/** What the agent needs from persistence (MongoDB in production, memory in benchmarks). */
import { randomBytes } from 'node:crypto';
import type { WireEntry } from '../sync/state.js';

export interface NodeIdentity {
  nodeId: string;
  incarnation: number;
}

export interface PersistedEntry extends WireEntry {
  fn: string;
}

/** Where to read the current entry of a key at flush time (write-behind coalesces changes). */
export type SnapshotFn = (fn: string, object: string, name: string) => WireEntry | undefined;

export interface StateStore {
  identity(wanted: string | undefined): Promise<NodeIdentity>;
  load(): AsyncIterable<PersistedEntry>;
  /** Marks a key changed. Resolves when written if the store is synchronous (delay 0). */
  changed(fn: string, object: string, name: string): Promise<void> | undefined;
  readonly pending: number;
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** A fresh node id, used once when neither MISO_NODE_ID nor a stored identity exists. */
export function randomNodeId(): string {
  return `node-${randomBytes(4).toString('hex')}`;
}
