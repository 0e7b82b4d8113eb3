/**
 * The cost limit of one operation, checked before anything runs or is forwarded:
 * - at most `maxRootFields` root fields (each alias is one; fragments are expanded), since every
 *   root field is a database query on every node the request reaches;
 * - in collect mode, the `limit`s of all `sensors` fields together at most `maxTotalLimit`
 *   readings (a field without `limit` counts as the largest allowed limit, `maxLimit`).
 * The per-request deadline is enforced by the service.
 */
import { SyncmeshError } from '../errors.js';

export interface CostLimits {
  maxRootFields: number;
  maxTotalLimit: number;
  maxLimit: number;
}

export interface RootField {
  name: string;
  args: Record<string, unknown>;
}

/** Throws EDGE_SYNCMESH_QUERY_TOO_COSTLY naming what is over and what is allowed. */
export function checkCost(fields: readonly RootField[], collect: boolean, limits: CostLimits): void {
  if (fields.length > limits.maxRootFields) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_QUERY_TOO_COSTLY',
      `the operation has ${fields.length} root fields (aliases count); at most ${limits.maxRootFields} are allowed`,
      {
        details: { allowed: `at most ${limits.maxRootFields} root fields per request (SYNCMESH_MAX_ROOT_FIELDS)` },
      },
    );
  }
  if (!collect) return;
  let total = 0;
  for (const f of fields) {
    if (f.name !== 'sensors') continue;
    const limit = f.args['limit'];
    total += typeof limit === 'number' ? limit : limits.maxLimit;
  }
  if (total > limits.maxTotalLimit) {
    throw new SyncmeshError(
      'EDGE_SYNCMESH_QUERY_TOO_COSTLY',
      `the sensors fields ask for ${total} readings in total; at most ${limits.maxTotalLimit} are allowed`,
      {
        details: {
          allowed: `the limits of all sensors fields together at most ${limits.maxTotalLimit} (SYNCMESH_MAX_TOTAL_LIMIT); a sensors field without limit counts as ${limits.maxLimit}`,
        },
      },
    );
  }
}
