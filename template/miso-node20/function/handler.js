// A stateful function: POST adds the body (an integer, default 1) to the counter `total` of the
// object the request names (header X-Miso-Object or ?object=, default "default"); GET reads it.
// The node's MISO agent replicates the counter to every node that runs this function, so the
// total is the sum of the adds on all of them. context.fail answers the SDK's coded JSON error
// ({"errors":[{"message","extensions":{"code","allowed"}}]}) with the status set before it.
export const handler = async (event, context) => {
  const counter = context.statefulObject.getGCounter('total');
  if (event.method === 'POST') {
    const text = typeof event.body === 'string' ? event.body.trim() : String(event.body ?? '');
    const n = text === '' ? 1 : Number(text);
    if (!Number.isSafeInteger(n) || n < 0) {
      return context.status(400).fail({
        message: `the body must be a non-negative integer, got ${JSON.stringify(text)}`,
        allowed: 'an integer from 0 to 2^53-1, or an empty body for 1',
      });
    }
    await counter.add(n);
  }
  return context.status(200).succeed({ total: await counter.value() });
};
