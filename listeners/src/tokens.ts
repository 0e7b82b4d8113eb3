/**
 * Where the listener remembers its position: one document per watched collection in
 * `<meta db>.listener_state` ({ _id: "<db>.<coll>", token, updatedAt }), written only after the
 * function acknowledged everything up to `token`. `token: null` means "position unknown" (after
 * lost history on a server that gives no start token): the next start resyncs.
 * Rejected batches go to `<meta db>.listener_dead_letters`.
 */
import type { Db, Document } from 'mongodb';
import type { ChangeEnvelope, ResumeToken } from './events.js';

export const STATE_COLLECTION = 'listener_state';
export const DEAD_LETTER_COLLECTION = 'listener_dead_letters';

export interface StoredPosition {
  token: ResumeToken | null;
  updatedAt: Date;
}

export interface DeadLetter {
  ns: string;
  kind: 'events' | 'resync';
  status: number | undefined;
  message: string;
  events?: readonly ChangeEnvelope[];
  resync?: Document;
}

export interface TokenStore {
  load(ns: string): Promise<StoredPosition | null>;
  save(ns: string, token: ResumeToken | null): Promise<void>;
  deadLetter(letter: DeadLetter): Promise<void>;
}

interface StateDoc {
  _id: string;
  token: ResumeToken | null;
  updatedAt: Date;
}

export function createTokenStore(meta: Db): TokenStore {
  const state = meta.collection<StateDoc>(STATE_COLLECTION);
  const dead = meta.collection(DEAD_LETTER_COLLECTION);
  return {
    async load(ns) {
      const doc = await state.findOne({ _id: ns });
      return doc ? { token: doc.token ?? null, updatedAt: doc.updatedAt } : null;
    },
    async save(ns, token) {
      await state.updateOne({ _id: ns }, { $set: { token, updatedAt: new Date() } }, { upsert: true });
    },
    async deadLetter(letter) {
      await dead.insertOne({ ...letter, at: new Date() });
    },
  };
}
