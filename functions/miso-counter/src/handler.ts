/**
 * The user code of the example function, as in the MISO paper's listing: every invocation
 * adds the request's number (default 1) to the object's `totalSum` G-Counter and answers with
 * the total, which is the sum over every node running this function.
 *
 *   POST /            body: 5            -> {"totalSum": 5}
 *   POST /?object=x   header X-Miso-Object selects the object too
 *   GET  /                               -> {"totalSum": <current>} (no change)
 *   POST /            body: -1           -> 400, the SDK's coded JSON error (context.fail)
 */
import type { Handler } from '@syncmesh-edge/miso-sdk';

export const handler: Handler = async (event, context) => {
  const so = context.statefulObject;
  if (event.method === 'POST') {
    const n = event.body === '' || event.body === undefined ? 1 : Number(event.body);
    if (!Number.isSafeInteger(n) || n < 0) {
      return context.status(400).fail({
        message: `the body must be a non-negative integer, got ${JSON.stringify(event.body)}`,
        allowed: 'an integer from 0 to 2^53-1, or an empty body for 1',
      });
    }
    await so.getGCounter('totalSum').add(n);
  }
  return context.status(200).succeed({ totalSum: await so.getGCounter('totalSum').value() });
};
