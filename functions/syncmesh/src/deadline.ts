/** The request deadline (SYNCMESH_REQUEST_DEADLINE_MS): the caller gets a coded 504 when the work takes longer. */
import { squashError } from '@syncmesh-edge/log';
import { SyncmeshError } from './errors.js';

/** `work`'s result, or EDGE_SYNCMESH_DEADLINE_EXCEEDED after `ms`. */
export async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    const allowed = `at most ${ms} ms per request (SYNCMESH_REQUEST_DEADLINE_MS); ask for fewer readings or a shorter time range`;
    timer = setTimeout(
      () => reject(new SyncmeshError('EDGE_SYNCMESH_DEADLINE_EXCEEDED', `the request took longer than ${ms} ms`, { details: { allowed } })),
      ms,
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
    // A request that passed its deadline may still settle later; its outcome no longer has a caller:
    // the caller already got EDGE_SYNCMESH_DEADLINE_EXCEEDED, and errors of the work itself are logged where they happen.
    work.catch(squashError);
  }
}
