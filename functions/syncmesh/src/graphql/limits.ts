/**
 * Guards that run before any resolver: query depth, and no MongoDB operators in inputs.
 */
import { GraphQLError, Kind, type ASTVisitor, type FragmentDefinitionNode, type SelectionSetNode, type ValidationContext } from 'graphql';
import { SyncmeshError } from '../errors.js';

function depthOf(set: SelectionSetNode | undefined, fragments: Map<string, FragmentDefinitionNode>, seen: Set<string>): number {
  if (!set) return 0;
  let max = 0;
  for (const sel of set.selections) {
    let d = 0;
    if (sel.kind === Kind.FIELD) d = sel.selectionSet ? 1 + depthOf(sel.selectionSet, fragments, seen) : 1;
    else if (sel.kind === Kind.INLINE_FRAGMENT) d = depthOf(sel.selectionSet, fragments, seen);
    else {
      const name = sel.name.value;
      const frag = fragments.get(name);
      if (frag && !seen.has(name)) {
        seen.add(name);
        d = depthOf(frag.selectionSet, fragments, seen);
        seen.delete(name);
      }
    }
    max = Math.max(max, d);
  }
  return max;
}

/** A validation rule that rejects operations nested deeper than `maxDepth` fields. */
export function depthLimitRule(maxDepth: number) {
  return (context: ValidationContext): ASTVisitor => {
    const doc = context.getDocument();
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of doc.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    return {
      OperationDefinition(node) {
        const depth = depthOf(node.selectionSet, fragments, new Set());
        if (depth > maxDepth) {
          context.reportError(
            new GraphQLError(`query depth ${depth} exceeds the limit of ${maxDepth}`, {
              nodes: [node],
              extensions: { code: 'EDGE_SYNCMESH_QUERY_TOO_DEEP', allowed: `at most ${maxDepth} nested fields` },
            }),
          );
        }
      },
    };
  };
}

/**
 * Rejects any object key that starts with `$` anywhere in the variables. GraphQL's typed inputs
 * would reject most of these anyway; this names the problem plainly.
 */
export function assertNoOperators(value: unknown, path = 'variables'): void {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) assertNoOperators(v, `${path}[${i}]`);
    return;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.startsWith('$')) {
        throw new SyncmeshError('EDGE_SYNCMESH_OPERATOR_INJECTION', `MongoDB operators are not accepted in inputs: '${k}' at ${path}`, {
          details: { allowed: 'plain values of the GraphQL input types (Int, Float, ID, DateTime, objects of them)' },
        });
      }
      assertNoOperators(v, `${path}.${k}`);
    }
  }
}
