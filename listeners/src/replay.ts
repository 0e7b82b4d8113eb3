/**
 * Re-delivers dead letters: batches the function rejected for good (4xx) and the listener
 * recorded in `<meta db>.listener_dead_letters` before moving on. Run it once the cause is
 * fixed (`node listeners/dist/src/cli.js replay`, `make listener-replay`).
 *
 * Letters are sent oldest first, with the listener's own client (same signatures, deadline and
 * classification). A delivered letter is marked `replayedAt` (kept for the record, never sent
 * twice); a rejected one gets `lastReplayError` and stays; a function that does not answer
 * stops the run (later letters would overtake it). Because a replayed batch is older than what
 * the subscribers got since, every namespace with a replayed letter then gets a `replay` resync:
 * the function sends its current state, which wins on the subscribers (newer revision).
 */
import type { Db, ObjectId } from 'mongodb';
import { classifyError } from './classify.js';
import type { FunctionClient } from './delivery.js';
import { DeliveryError } from './errors.js';
import type { ChangeEnvelope } from './events.js';
import { DEAD_LETTER_COLLECTION } from './tokens.js';

export interface ReplayOptions {
  /** Only letters of this namespace (`db.coll`). */
  ns?: string | undefined;
  /** Only this letter (hex ObjectId). */
  id?: ObjectId | undefined;
  /** Also letters replayed before. */
  all?: boolean;
  /** List what would be sent, send nothing. */
  dryRun?: boolean;
  /** Skip the closing resync (tests, or when a resync is requested separately). */
  noResync?: boolean;
}

export interface ReplayedLetter {
  id: string;
  ns: string;
  kind: 'events' | 'resync';
  events: number;
  outcome: 'replayed' | 'rejected' | 'unavailable' | 'dry-run' | 'not-sent';
  status?: number | undefined;
  message?: string;
}

export interface ReplaySummary {
  letters: ReplayedLetter[];
  replayed: number;
  rejected: number;
  /** Namespaces resynced after their letters were replayed. */
  resynced: string[];
  /** True when every selected letter was delivered (or it was a dry run). */
  ok: boolean;
}

interface LetterDoc {
  _id: ObjectId;
  ns: string;
  kind: 'events' | 'resync';
  events?: ChangeEnvelope[];
  resync?: { db: string; coll: string; reason: string };
  at?: Date;
  replayedAt?: Date;
}

export async function replayDeadLetters(meta: Db, client: FunctionClient, opts: ReplayOptions = {}): Promise<ReplaySummary> {
  const dead = meta.collection<LetterDoc>(DEAD_LETTER_COLLECTION);
  const filter: Record<string, unknown> = {};
  if (opts.ns) filter['ns'] = opts.ns;
  if (opts.id) filter['_id'] = opts.id;
  if (!opts.all) filter['replayedAt'] = { $exists: false };
  const letters = await dead.find(filter).sort({ at: 1, _id: 1 }).toArray();
  const summary: ReplaySummary = { letters: [], replayed: 0, rejected: 0, resynced: [], ok: true };
  const touched = new Set<string>();
  let stopped = false;
  for (const l of letters) {
    const row: ReplayedLetter = { id: l._id.toHexString(), ns: l.ns, kind: l.kind, events: l.events?.length ?? 0, outcome: 'dry-run' };
    summary.letters.push(row);
    if (opts.dryRun) continue;
    if (stopped) {
      row.outcome = 'not-sent';
      continue;
    }
    try {
      const res =
        l.kind === 'events' ? await client.postEvents(l.events ?? []) : await client.postResync({ db: l.resync!.db, coll: l.resync!.coll, reason: 'replay' });
      row.outcome = 'replayed';
      row.status = res.status;
      summary.replayed++;
      touched.add(l.ns);
      await dead.updateOne({ _id: l._id }, { $set: { replayedAt: new Date(), replayStatus: res.status } });
    } catch (err) {
      if (!(err instanceof DeliveryError)) throw err;
      summary.ok = false;
      row.status = err.status;
      row.message = err.message;
      await dead.updateOne({ _id: l._id }, { $set: { lastReplayAt: new Date(), lastReplayError: err.message } });
      if (classifyError(err).action === 'reject') {
        row.outcome = 'rejected';
        summary.rejected++;
      } else {
        row.outcome = 'unavailable';
        stopped = true; // later letters must not overtake this one
      }
    }
  }
  if (!opts.dryRun && !opts.noResync) {
    for (const ns of touched) {
      const dot = ns.indexOf('.');
      try {
        await client.postResync({ db: ns.slice(0, dot), coll: ns.slice(dot + 1), reason: 'replay' });
        summary.resynced.push(ns);
      } catch (err) {
        if (!(err instanceof DeliveryError)) throw err;
        summary.ok = false;
        summary.letters.push({
          id: '-',
          ns,
          kind: 'resync',
          events: 0,
          outcome: 'rejected',
          status: err.status,
          message: `closing resync failed: ${err.message}`,
        });
      }
    }
  }
  if (opts.dryRun) summary.ok = true;
  return summary;
}
