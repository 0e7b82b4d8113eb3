/**
 * Guards on a request's variables that run before any resolver: no MongoDB operators in inputs,
 * and no nesting deeper than any input type of the schemas needs. Iterative: a client's JSON may
 * nest as deep as its body allows, and a recursive walk would overflow the stack (a 500).
 */
import { SyncmeshError } from '../errors.js';

/** Deepest nesting of arrays and objects accepted in `variables` (the schemas' inputs need 3). */
export const MAX_VARIABLES_DEPTH = 32;

/**
 * Rejects variables nested deeper than MAX_VARIABLES_DEPTH, and any object key that starts with
 * `$` anywhere in them. GraphQL's typed inputs would reject most of these anyway; this names the
 * problem plainly.
 */
export function checkVariables(variables: unknown): void {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: variables, path: 'variables', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_VARIABLES_DEPTH) {
      throw new SyncmeshError('EDGE_SYNCMESH_BAD_REQUEST', `variables are nested more than ${MAX_VARIABLES_DEPTH} levels deep (at ${path})`, {
        details: { allowed: `arrays and objects nested at most ${MAX_VARIABLES_DEPTH} levels deep in variables` },
      });
    }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    const entries = Object.entries(value);
    for (const [k] of entries) {
      if (k.startsWith('$')) {
        throw new SyncmeshError('EDGE_SYNCMESH_OPERATOR_INJECTION', `MongoDB operators are not accepted in inputs: '${k}' at ${path}`, {
          details: { allowed: 'plain values of the GraphQL input types (Int, Float, ID, DateTime, objects of them)' },
        });
      }
    }
    for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], path: `${path}.${entries[i]![0]}`, depth: depth + 1 });
  }
}
