import type { NodeIdentity, PersistedEntry, StateStore } from './types.js';
import { randomNodeId } from './types.js';

/** No persistence (MONGODB_URI unset): state lives in memory only, as in MISO. */
export class MemoryStateStore implements StateStore {
  readonly pending = 0;
  async identity(wanted: string | undefined): Promise<NodeIdentity> {
    return { nodeId: wanted ?? randomNodeId(), incarnation: Date.now() };
  }
  async *load(): AsyncIterable<PersistedEntry> {
    /* nothing persisted */
  }
  changed(): undefined {
    return undefined;
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}
