// Asks the mesh for the sensors' averages between ?start= and ?end= (ISO times) within ?radius=
// km of the node (optional): the node's Syncmesh function forwards the query to the nodes in the
// radius and answers with exact mesh-wide averages. Queries need no key; writes do.
// context.fail answers the SDK's coded JSON error ({"errors":[{"message","extensions":{"code","allowed"}}]}).
const SYNCMESH = process.env.SYNCMESH_URL ?? 'http://gateway:8080/function/syncmesh-fn';
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

export const handler = async (event, context) => {
  const start = event.query.start ?? '2017-07-01T00:00:00Z';
  const end = event.query.end ?? '2017-08-01T00:00:00Z';
  if (!TIME.test(start) || !TIME.test(end)) {
    return context.status(400).fail({ message: `start and end must be UTC times, got start=${start} end=${end}`, allowed: 'times like 2017-07-01T00:00:00Z' });
  }
  const radius = event.query.radius === undefined ? undefined : Number(event.query.radius);
  if (radius !== undefined && !(radius > 0 && radius <= 20000)) {
    return context.status(400).fail({ message: `radius must be a number of km, got ${event.query.radius}`, allowed: 'above 0 and at most 20000' });
  }
  const body = {
    query: `{ sensorsAggregate(start_time: "${start}", end_time: "${end}") { count average_temperature average_humidity average_pressure } }`,
    request_type: 'aggregate',
    ...(radius === undefined ? {} : { radius }),
  };
  const res = await fetch(SYNCMESH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(25_000),
  });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok || answer.errors || !answer.data) {
    const code = answer.errors?.[0]?.extensions?.code;
    return context.status(502).fail(`the mesh query failed: the node's Syncmesh function answered HTTP ${res.status}${code ? ` ${code}` : ''}`);
  }
  return context.status(200).succeed(answer.data.sensorsAggregate);
};
