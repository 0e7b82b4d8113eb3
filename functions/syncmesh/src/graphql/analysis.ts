/**
 * What an operation costs, read from the parsed document before graphql-js validates or
 * executes it (issue 27): how deep it nests, how many field selections it expands to, how many
 * root fields and `sensors` readings it asks for, and how many values its answer may hold.
 *
 * - Fragments are analysed once per document and memoised: a spread adds the fragment's summary
 *   (so `...F ...F` costs two additions, not two walks), and a chain of fragments that spread the
 *   next one twice is linear to analyse while its summary grows exponentially, as its expansion
 *   would.
 * - Every field counts, aliases included: the answer estimate is the sum over the leaf selections
 *   of the product of the list multipliers above each (a list field's `limit`, or what the caller's
 *   `sizeOf` says a list may hold). It is an upper bound of what execution produces.
 * - Nothing here recurses on the document: graphql-js's `visit` is iterative, and fragments are
 *   ordered by an iterative depth-first search (a cycle is refused here, before validation).
 */
import {
  getNamedType,
  GraphQLError,
  isListType,
  isNonNullType,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** The cost of one selection set (fragments expanded), as the answer would see it. */
export interface Summary {
  /** Deepest nesting of fields (a leaf field is 1). */
  depth: number;
  /** Fields, fragment spreads and inline fragments, every spread expanded where it is spread. */
  selections: number;
  /** Upper bound of the values in the answer: sum over leaves of the list multipliers above them. */
  values: number;
  /** Fields at this level (the operation's root fields, for the root), spreads expanded. */
  rootFields: number;
  /** Readings the `sensors` fields at this level ask the database for (see `Rules.readings`). */
  readings: number;
  /** Every field at this level is `__schema`, `__type` or `__typename`. */
  introspectionOnly: boolean;
}

/** One field as the rules see it. */
export interface FieldAt {
  node: FieldNode;
  /** The field's definition; undefined for a field the schema does not have (validation refuses it later). */
  def: GraphQLField<unknown, unknown> | undefined;
  parent: GraphQLCompositeType | undefined;
}

export interface Rules {
  /** How many elements a list field may hold (its `limit`, a cap, the size of an introspection list). */
  sizeOf(field: FieldAt): number;
  /** Readings a field asks its node's database for (0 for all but `sensors` in collect mode). */
  readings(field: FieldAt): number;
}

const INTROSPECTION_ROOTS = new Set(['__schema', '__type', '__typename']);

const empty = (): Summary => ({ depth: 0, selections: 0, values: 0, rootFields: 0, readings: 0, introspectionOnly: true });

/** Adds a spread's or inline fragment's summary to the level it is spread into. */
function addLevel(into: Summary, s: Summary): void {
  into.depth = Math.max(into.depth, s.depth);
  into.selections += 1 + s.selections;
  into.values += s.values;
  into.rootFields += s.rootFields;
  into.readings += s.readings;
  into.introspectionOnly &&= s.introspectionOnly;
}

/** The list multiplier of a field's type: the product over its list wrappers ([[T]] counts twice). */
function multiplier(type: GraphQLOutputType | undefined, field: FieldAt, rules: Rules): number {
  let m = 1;
  for (let t: GraphQLOutputType | undefined = type; t; ) {
    if (isNonNullType(t)) t = t.ofType;
    else if (isListType(t)) {
      m *= rules.sizeOf(field);
      t = t.ofType as GraphQLOutputType;
    } else break;
  }
  return m;
}

/** Fragment names each fragment spreads (anywhere inside it). */
function spreadsOf(def: FragmentDefinitionNode): string[] {
  const names: string[] = [];
  visit(def.selectionSet, { FragmentSpread: (node) => void names.push(node.name.value) });
  return names;
}

/**
 * Fragments in dependency order (a fragment after every fragment it spreads), by an iterative
 * depth-first search. Throws a GraphQL validation error naming a fragment that spreads itself.
 */
function fragmentOrder(fragments: Map<string, FragmentDefinitionNode>): FragmentDefinitionNode[] {
  const deps = new Map<string, string[]>();
  for (const [name, def] of fragments)
    deps.set(
      name,
      [...new Set(spreadsOf(def))].filter((n) => fragments.has(n)),
    );
  const state = new Map<string, 'open' | 'done'>();
  const order: FragmentDefinitionNode[] = [];
  for (const start of fragments.keys()) {
    if (state.has(start)) continue;
    const stack: Array<{ name: string; next: number }> = [{ name: start, next: 0 }];
    state.set(start, 'open');
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const children = deps.get(top.name)!;
      if (top.next < children.length) {
        const child = children[top.next++]!;
        const s = state.get(child);
        if (s === 'open') throw new GraphQLError(`Cannot spread fragment "${child}" within itself.`, { nodes: [fragments.get(child)!] });
        if (s === undefined) {
          state.set(child, 'open');
          stack.push({ name: child, next: 0 });
        }
        continue;
      }
      state.set(top.name, 'done');
      order.push(fragments.get(top.name)!);
      stack.pop();
    }
  }
  return order;
}

/** The summary of one definition's selection set, given the summaries of the fragments it spreads. */
function summarise(schema: GraphQLSchema, def: OperationDefinitionNode | FragmentDefinitionNode, done: Map<string, Summary>, rules: Rules): Summary {
  const typeInfo = new TypeInfo(schema);
  const levels: Summary[] = [];
  const finished = new Map<SelectionSetNode, Summary>();
  visit(
    def,
    visitWithTypeInfo(typeInfo, {
      SelectionSet: {
        enter: () => void levels.push(empty()),
        leave: (node) => void finished.set(node, levels.pop()!),
      },
      Field: {
        leave: (node) => {
          const level = levels[levels.length - 1]!;
          const field: FieldAt = { node, def: typeInfo.getFieldDef() ?? undefined, parent: typeInfo.getParentType() ?? undefined };
          const below = node.selectionSet ? finished.get(node.selectionSet) : undefined;
          const m = multiplier(typeInfo.getType() ?? undefined, field, rules);
          level.depth = Math.max(level.depth, 1 + (below?.depth ?? 0));
          level.selections += 1 + (below?.selections ?? 0);
          level.values += m * (below ? below.values : 1);
          level.rootFields += 1;
          level.readings += rules.readings(field);
          level.introspectionOnly &&= INTROSPECTION_ROOTS.has(node.name.value);
        },
      },
      InlineFragment: {
        leave: (node) => void addLevel(levels[levels.length - 1]!, finished.get(node.selectionSet) ?? empty()),
      },
      FragmentSpread: (node) => {
        const s = done.get(node.name.value);
        if (s) addLevel(levels[levels.length - 1]!, s);
        else levels[levels.length - 1]!.selections += 1; // unknown fragment: validation refuses it
      },
    }),
  );
  return finished.get(def.selectionSet) ?? empty();
}

/**
 * The cost of `operation` in `document`: every fragment of the document summarised once, in
 * dependency order, then the operation. Linear in the document's size.
 */
export function analyse(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, rules: Rules): Summary {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION && !fragments.has(d.name.value)) fragments.set(d.name.value, d);
  const done = new Map<string, Summary>();
  for (const f of fragmentOrder(fragments)) done.set(f.name.value, summarise(schema, f, done, rules));
  return summarise(schema, operation, done, rules);
}

/**
 * The root fields of an operation through fragments, as graphql-js collects them (a fragment is
 * expanded once per selection set, however often it is spread): no recursion, linear.
 */
export function rootFieldNodes(document: DocumentNode, operation: OperationDefinitionNode): FieldNode[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION && !fragments.has(d.name.value)) fragments.set(d.name.value, d);
  return collectFieldNodes([operation.selectionSet], fragments);
}

/** Fields of the given selection sets through inline fragments and spreads, each fragment once. */
export function collectFieldNodes(sets: readonly SelectionSetNode[], fragments: ReadonlyMap<string, FragmentDefinitionNode>): FieldNode[] {
  const out: FieldNode[] = [];
  const visited = new Set<string>();
  const stack = [...sets].reverse();
  while (stack.length > 0) {
    const set = stack.pop()!;
    const nested: SelectionSetNode[] = [];
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) out.push(sel);
      else if (sel.kind === Kind.INLINE_FRAGMENT) nested.push(sel.selectionSet);
      else if (!visited.has(sel.name.value)) {
        visited.add(sel.name.value);
        const frag = fragments.get(sel.name.value);
        if (frag) nested.push(frag.selectionSet);
      }
    }
    stack.push(...nested.reverse());
  }
  return out;
}

/** The named type a field returns, or undefined. */
export const namedTypeOf = (field: FieldAt) => (field.def ? getNamedType(field.def.type) : undefined);
