/**
 * Resolvers of the data schema. Root query fields compute this node's partial answer in its
 * database and, on the node that received the client's query, merge the partials of the other
 * nodes before GraphQL shapes the result. Mutations only ever touch this node's database.
 */
import type { FieldNode, GraphQLResolveInfo } from 'graphql';
import { badArgument, SyncmeshError } from '../errors.js';
import { collectFieldNodes } from '../graphql/analysis.js';
import {
  METRICS,
  finishAggregate,
  mergePartials,
  statsFor,
  type AggregatePartial,
  type DocsPartial,
  type PartialAnswer,
  type SensorDoc,
} from '../data/partials.js';
import { SENSOR_FIELDS, type SensorField, type SensorFilter, type SensorStore, type StoredSensor } from '../data/sensors.js';

export interface DataContext {
  /** This node's id (named in errors). */
  nodeId: string;
  store: SensorStore;
  requestType: 'collect' | 'aggregate';
  maxLimit: number;
  maxSensorsPerMutation: number;
  /** Widest accepted deleteInTimeRange (end_time - start_time), ms. */
  maxDeleteRangeMs: number;
  /** This node's partial answer per response key (what a forwarded request returns). */
  partials: Record<string, PartialAnswer>;
  /** On the entry node: the other nodes' partials, resolved when the fan-out is done. */
  remote: Promise<Array<Record<string, PartialAnswer>>> | undefined;
  /** Time spent waiting for this node's database, summed over the root fields (ms). */
  dbMs: number;
}

/** Runs one database call and adds its duration to ctx.dbMs. */
async function timed<T>(ctx: DataContext, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await call();
  } finally {
    ctx.dbMs += performance.now() - started;
  }
}

export interface Limits {
  maxLimit: number;
  maxSensorsPerMutation: number;
  maxDeleteRangeMs: number;
}

type Args = Record<string, unknown>;

function filterOf(args: Args): SensorFilter {
  const start = args['start_time'] as Date | undefined | null;
  const end = args['end_time'] as Date | undefined | null;
  if (start && end && start.getTime() > end.getTime()) {
    throw badArgument(`start_time ${start.toISOString()} is after end_time ${end.toISOString()}`, { allowed: 'start_time <= end_time' });
  }
  const sensorId = args['sensor_id'] as number | undefined | null;
  return { start: start ?? undefined, end: end ?? undefined, sensorId: sensorId ?? undefined };
}

function limitOf(args: Args, maxLimit: number): number | null {
  const limit = args['limit'] as number | undefined | null;
  if (limit === undefined || limit === null) return null;
  if (limit < 0 || limit > maxLimit) {
    throw badArgument(`limit ${limit} is out of range`, { allowed: `0 to ${maxLimit}` });
  }
  return limit;
}

/** lat/lon of a reading being written must be real coordinates. */
function checkCoordinates(reading: Args, where: string): void {
  const lat = reading['lat'];
  const lon = reading['lon'];
  if (typeof lat === 'number' && (lat < -90 || lat > 90)) throw badArgument(`${where}: lat ${lat} is out of range`, { allowed: '-90 to 90' });
  if (typeof lon === 'number' && (lon < -180 || lon > 180)) throw badArgument(`${where}: lon ${lon} is out of range`, { allowed: '-180 to 180' });
}

function idOf(args: Args): string {
  const id = String(args['_id']);
  if (id.length === 0 || id.length > 200) throw badArgument('_id must be 1 to 200 characters', { allowed: 'a 24-hex ObjectId or a string id' });
  return id;
}

/**
 * Checks the arguments of one root field. Runs before the fan-out (so that a bad query is
 * rejected once, here, with HTTP 400) and again inside the resolvers.
 */
export function validateDataArgs(field: string, args: Args, limits: Limits): void {
  switch (field) {
    case 'sensors':
      filterOf(args);
      limitOf(args, limits.maxLimit);
      return;
    case 'sensorsAggregate':
      filterOf(args);
      return;
    case 'sensor':
    case 'deleteSensor':
      idOf(args);
      return;
    case 'update':
      idOf(args);
      if (Object.keys(stored((args['sensor'] ?? {}) as Args)).length === 0) {
        throw badArgument('update needs at least one field in sensor', { allowed: SENSOR_FIELDS });
      }
      checkCoordinates((args['sensor'] ?? {}) as Args, 'sensor');
      return;
    case 'deleteInTimeRange': {
      const { start, end } = filterOf(args);
      // Both ends are required by the schema (DateTime!); a variable could still be null.
      if (!start || !end)
        throw badArgument('deleteInTimeRange needs both start_time and end_time', { allowed: `a range of at most ${days(limits.maxDeleteRangeMs)} days` });
      const span = end.getTime() - start.getTime();
      if (span > limits.maxDeleteRangeMs) {
        throw badArgument(`deleteInTimeRange spans ${days(span)} days (${start.toISOString()} to ${end.toISOString()})`, {
          allowed: `a range of at most ${days(limits.maxDeleteRangeMs)} days (SYNCMESH_MAX_DELETE_RANGE_DAYS); delete longer periods in several requests`,
        });
      }
      return;
    }
    case 'addSensors': {
      const sensors = args['sensors'] as Args[];
      if (sensors.length > limits.maxSensorsPerMutation) {
        throw badArgument(`addSensors got ${sensors.length} readings`, { allowed: `at most ${limits.maxSensorsPerMutation} per request` });
      }
      for (const [i, s] of sensors.entries()) checkCoordinates(s, `sensors[${i}]`);
      return;
    }
    default:
      return;
  }
}

const days = (ms: number) => Math.round((ms / 86_400_000) * 100) / 100;

/** Names of the fields selected under a field, through fragments too (each fragment once: no repeated walks). */
function selectedNames(info: GraphQLResolveInfo): Set<string> {
  const sets = (info.fieldNodes as readonly FieldNode[]).flatMap((n) => (n.selectionSet ? [n.selectionSet] : []));
  return new Set(collectFieldNodes(sets, new Map(Object.entries(info.fragments))).map((f) => f.name.value));
}

/** Sensor fields selected under a field, so nodes only send what is asked. */
export function requestedFields(info: GraphQLResolveInfo): SensorField[] {
  const names = selectedNames(info);
  return SENSOR_FIELDS.filter((f) => names.has(f));
}

/** `sensors` in aggregate mode answers with the averages of every metric. */
const AVERAGES = statsFor(METRICS.map((m) => `average_${m}`));

async function combine(ctx: DataContext, key: string, local: PartialAnswer, limit: number | null): Promise<PartialAnswer> {
  ctx.partials[key] = local;
  if (!ctx.remote) return local;
  let merged = local;
  for (const answer of await ctx.remote) {
    const other = answer[key];
    if (other) merged = mergePartials(merged, other, limit);
  }
  return merged;
}

const limitsOf = (ctx: DataContext): Limits => ({
  maxLimit: ctx.maxLimit,
  maxSensorsPerMutation: ctx.maxSensorsPerMutation,
  maxDeleteRangeMs: ctx.maxDeleteRangeMs,
});

function stored(input: Args): Partial<StoredSensor> {
  const out: Record<string, unknown> = {};
  for (const f of SENSOR_FIELDS) if (input[f] !== undefined) out[f] = input[f];
  return out as Partial<StoredSensor>;
}

export const dataRoot = {
  async sensors(args: Args, ctx: DataContext, info: GraphQLResolveInfo): Promise<SensorDoc[]> {
    validateDataArgs('sensors', args, limitsOf(ctx));
    const filter = filterOf(args);
    const key = info.path.key as string;
    if (ctx.requestType === 'aggregate') {
      // The original Syncmesh answered `sensors` in aggregate mode with the averages.
      const merged = (await combine(ctx, key, await timed(ctx, () => ctx.store.aggregate(filter, AVERAGES)), null)) as AggregatePartial;
      const r = finishAggregate(merged);
      return [{ _id: 'aggregate', temperature: r.average_temperature, humidity: r.average_humidity, pressure: r.average_pressure }];
    }
    const limit = limitOf(args, ctx.maxLimit);
    // Without a limit a node reads at most SYNCMESH_MAX_LIMIT readings, as the cost check counted
    // (graphql/cost.ts); one more tells that there were more, which is refused, never cut silently.
    const docs = await timed(ctx, () => ctx.store.find(filter, limit ?? ctx.maxLimit + 1, requestedFields(info)));
    if (limit === null && docs.length > ctx.maxLimit) {
      throw new SyncmeshError(
        'EDGE_SYNCMESH_QUERY_TOO_COSTLY',
        `more than ${ctx.maxLimit} readings match a sensors field without limit on node ${ctx.nodeId}`,
        {
          details: {
            allowed: `at most ${ctx.maxLimit} readings per node for a sensors field without limit (SYNCMESH_MAX_LIMIT): give a limit or a shorter time range`,
          },
        },
      );
    }
    return ((await combine(ctx, key, { kind: 'docs', docs }, limit)) as DocsPartial).docs;
  },

  async sensorsAggregate(args: Args, ctx: DataContext, info: GraphQLResolveInfo) {
    validateDataArgs('sensorsAggregate', args, limitsOf(ctx));
    const merged = await combine(
      ctx,
      info.path.key as string,
      await timed(ctx, () => ctx.store.aggregate(filterOf(args), statsFor(selectedNames(info)))),
      null,
    );
    return finishAggregate(merged as AggregatePartial);
  },

  async sensor(args: Args, ctx: DataContext, info: GraphQLResolveInfo) {
    const doc = await timed(ctx, () => ctx.store.findById(idOf(args)));
    const merged = await combine(ctx, info.path.key as string, { kind: 'doc', doc }, null);
    return merged.kind === 'doc' ? merged.doc : null;
  },

  async docEstimate(_args: Args, ctx: DataContext, info: GraphQLResolveInfo) {
    const merged = await combine(ctx, info.path.key as string, { kind: 'count', n: await timed(ctx, () => ctx.store.estimate()) }, null);
    return merged.kind === 'count' ? merged.n : 0;
  },

  async addSensors(args: Args, ctx: DataContext) {
    validateDataArgs('addSensors', args, limitsOf(ctx));
    const docs = (args['sensors'] as Args[]).map((s) => stored(s) as StoredSensor);
    return timed(ctx, () => ctx.store.insert(docs));
  },

  async update(args: Args, ctx: DataContext) {
    validateDataArgs('update', args, limitsOf(ctx));
    return timed(ctx, () => ctx.store.update(idOf(args), stored((args['sensor'] ?? {}) as Args)));
  },

  async deleteSensor(args: Args, ctx: DataContext) {
    return timed(ctx, () => ctx.store.deleteById(idOf(args)));
  },

  async deleteInTimeRange(args: Args, ctx: DataContext) {
    validateDataArgs('deleteInTimeRange', args, limitsOf(ctx));
    return timed(ctx, () => ctx.store.deleteInRange(filterOf(args)));
  },
};
