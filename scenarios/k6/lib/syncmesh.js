// Request bodies and answer checks for the Syncmesh function, shared by every script here.
// Plain JavaScript as k6 runs it (no build step).

/** Milliseconds in a day; a timespan of D days ends 1 s before start + D days (bounds are inclusive). */
const DAY_MS = 86400000;

/**
 * The original Syncmesh benchmark's query (selection `temperature humidity pressure`), sent as
 * `collect` (every reading in the window) or `aggregate` (one element: the mesh-wide averages).
 */
export function queryBody({ workload, start, days, forward, radiusKm, peers }) {
  const end = new Date(Date.parse(start) + days * DAY_MS - 1000).toISOString().replace('.000Z', 'Z');
  const body = {
    query: `{ sensors(start_time: "${start}", end_time: "${end}") { temperature humidity pressure } }`,
    request_type: workload,
  };
  if (forward === 'registry') {
    body.use_meta_data = true;
    if (radiusKm !== undefined) body.radius = radiusKm;
  } else if (forward === 'external') {
    body.external_nodes = peers;
  } else {
    body.use_meta_data = false;
  }
  return body;
}

/** Splits NODE_URLS into the entry node (first) and the others. */
export function entryAndPeers(nodeUrls) {
  const urls = nodeUrls
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
  if (urls.length === 0) throw new Error('NODE_URLS is empty: give at least the entry node URL');
  return { entry: urls[0], peers: urls.slice(1) };
}

/** The URL of GET /healthz next to a function URL (same server, or the faasd gateway). */
export function healthUrl(functionUrl) {
  const m = /^(https?:\/\/[^/]+)/.exec(functionUrl);
  return `${m ? m[1] : functionUrl}/healthz`;
}

/** Largest value of `field` over the nodes a Syncmesh answer lists (0 when none). */
export function maxOverNodes(ext, field) {
  let max = 0;
  for (const n of ext?.nodes || []) {
    if (typeof n[field] === 'number' && n[field] > max) max = n[field];
  }
  return max;
}
