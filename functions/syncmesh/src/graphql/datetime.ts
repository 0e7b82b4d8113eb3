import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';

/**
 * ISO-8601 date-times: `2017-07-31`, `2017-07-31T23:59:59`, `2017-07-31T23:59:59.5Z`,
 * `2017-07-31T23:59:59+03:00`. A value without a zone is UTC (as the Sofia data is).
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** What Date.prototype.toISOString produces. */
const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function parseDateTime(raw: string): Date {
  const m = ISO.exec(raw);
  if (!m) {
    throw new Error(`'${raw}' is not an ISO-8601 date-time; use e.g. 2017-07-31T00:00:00Z (no zone means UTC)`);
  }
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const ms = frac ? `.${frac.slice(0, 3).padEnd(3, '0')}` : '';
  const z = zone === 'Z' ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${ms}${z}`);
  // Date accepts 2017-02-31 and rolls over; reject what does not round-trip.
  if (Number.isNaN(date.getTime()) || Number(mo) > 12 || Number(d) > 31 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) {
    throw new Error(`'${raw}' is not a valid date-time`);
  }
  if (z === 'Z' && date.getUTCDate() !== Number(d)) throw new Error(`'${raw}' is not a valid date-time`);
  return date;
}

export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'ISO-8601 date-time. Without a zone it is read as UTC. Returned as UTC, e.g. 2017-07-31T00:00:00.000Z.',
  serialize(value) {
    if (value instanceof Date) return value.toISOString();
    // Readings travel as canonical ISO strings already (toSensorDoc); only others are re-parsed.
    if (typeof value === 'string') return CANONICAL.test(value) ? value : parseDateTime(value).toISOString();
    throw new GraphQLError(`DateTime cannot represent ${typeof value}`);
  },
  parseValue(value) {
    if (typeof value !== 'string') throw new GraphQLError('DateTime must be a string such as 2017-07-31T00:00:00Z');
    try {
      return parseDateTime(value);
    } catch (err) {
      throw new GraphQLError((err as Error).message);
    }
  },
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string such as "2017-07-31T00:00:00Z"');
    try {
      return parseDateTime(ast.value);
    } catch (err) {
      throw new GraphQLError((err as Error).message);
    }
  },
});
