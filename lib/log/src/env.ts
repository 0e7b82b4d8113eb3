/**
 * What every service's `src/config.ts` reads the same way: the log level, bounded integers,
 * the zod issues of a refused environment as one message, and MONGODB_URI_FILE (a mounted secret
 * that supplies MONGODB_URI). Each component keeps its own schema and its own coded
 * configuration error (`fail`); this module only says how the shared parts are read.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** pino's level names, the allowed values of every service's LOG_LEVEL. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** LOG_LEVEL: one of LOG_LEVELS, `info` by default. */
export const logLevel = () => z.enum(LOG_LEVELS).default('info');

/** An integer variable within [min, max] (a string in the environment). */
export const intEnv = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** Builds a component's coded configuration error from a message (and what caused it). */
export type ConfigFail = (message: string, cause?: unknown) => Error;

/**
 * The issues of a refused environment as one message, each naming its variable:
 * `LISTENER_BATCH_SIZE: Invalid input: expected number, received NaN; ...`.
 */
export function configProblems(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  return error.issues.map((i) => `${i.path.map(String).join('.') || '(environment)'}: ${i.message}`).join('; ');
}

/**
 * MONGODB_URI_FILE (a mounted secret; on faasd `mongodb-uri`) supplies MONGODB_URI, so a URI with
 * credentials never sits in the environment. Setting both is a configuration error (which one
 * should win would be a guess); the file must exist and hold a mongodb:// or mongodb+srv:// URI
 * (surrounding white space trimmed). Messages never quote the URI: it may carry a password.
 * Empty variables count as unset.
 */
export function withMongoUriFromFile<E extends Record<string, string | undefined>>(
  env: E,
  fail: ConfigFail,
  readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): E {
  const file = env['MONGODB_URI_FILE'];
  if (!file) return env;
  if (env['MONGODB_URI']) throw fail('MONGODB_URI and MONGODB_URI_FILE are both set; set only one (the file keeps credentials out of the environment)');
  let uri: string;
  try {
    uri = readFile(file).trim();
  } catch (err) {
    throw fail(`MONGODB_URI_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, err);
  }
  if (!/^mongodb(\+srv)?:\/\//.test(uri)) throw fail(`MONGODB_URI_FILE: ${file} must hold a URI starting with mongodb:// or mongodb+srv://`);
  return { ...env, MONGODB_URI: uri };
}
