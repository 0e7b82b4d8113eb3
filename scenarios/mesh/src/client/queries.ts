/** The request bodies the demo, the benchmark and the tests send (Syncmesh envelope). */

/** July 2017: the Sofia dataset's month, and the generator's default. */
export const MONTH_START = '2017-07-01T00:00:00Z';
export const MONTH_END = '2017-07-31T23:59:59Z';
/** The demo's collect window: one day, a few hundred readings per node. */
export const DAY_END = '2017-07-01T23:59:59Z';
/** The first week: the VM tiers' aggregate (a month's scan does not fit the gateway's 60 s under software emulation). */
export const WEEK_END = '2017-07-07T23:59:59Z';
/** Sofia fits in a 50 km radius: every node of a Sofia mesh is inside it. */
export const DEFAULT_RADIUS_KM = 50;

export interface QueryOptions {
  radius?: number | undefined;
  /** false: the entry node answers alone (no forwarding). */
  useMetaData?: boolean;
}

export function aggregateRequest(start = MONTH_START, end = MONTH_END, opts: QueryOptions = {}): Record<string, unknown> {
  return {
    query: `{ sensorsAggregate(start_time: ${JSON.stringify(start)}, end_time: ${JSON.stringify(end)}) { count average_temperature average_humidity average_pressure } }`,
    request_type: 'aggregate',
    use_meta_data: opts.useMetaData ?? true,
    ...(opts.radius !== undefined ? { radius: opts.radius } : {}),
  };
}

export function collectRequest(start = MONTH_START, end = DAY_END, opts: QueryOptions & { limit?: number } = {}): Record<string, unknown> {
  const limit = opts.limit !== undefined ? `, limit: ${opts.limit}` : '';
  return {
    query: `{ sensors(start_time: ${JSON.stringify(start)}, end_time: ${JSON.stringify(end)}${limit}) { _id sensor_id timestamp temperature humidity pressure } }`,
    request_type: 'collect',
    use_meta_data: opts.useMetaData ?? true,
    ...(opts.radius !== undefined ? { radius: opts.radius } : {}),
  };
}

/**
 * The mesh-wide document estimate: every node answers from its collection's metadata, so the
 * database does almost no work and the round trip shows the forwarding itself.
 */
export function estimateRequest(opts: QueryOptions = {}): Record<string, unknown> {
  return {
    query: '{ docEstimate }',
    request_type: 'collect',
    use_meta_data: opts.useMetaData ?? true,
    ...(opts.radius !== undefined ? { radius: opts.radius } : {}),
  };
}

/**
 * A body as the original Syncmesh client sends it: the database and collection named, the
 * request type, and the nodes to ask in `external_nodes` (their function URLs, as `mesh-up`
 * prints them and `topology.json` lists them); no registry options.
 */
export function originalRequest(query: string, requestType: 'collect' | 'aggregate', externalNodes: readonly string[]): Record<string, unknown> {
  return { query, database: 'syncmesh', collection: 'sensor_data', request_type: requestType, external_nodes: [...externalNodes] };
}
