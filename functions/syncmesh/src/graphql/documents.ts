/**
 * Parsed and validated GraphQL documents by query text. The same query text arrives again and
 * again (a dashboard's refresh, and every node of a fan-out parses the entry's query), and
 * validation walks the whole document with every rule: about as much CPU as answering a small
 * query. Only documents that passed validation are kept; graphql-js never mutates them. The
 * same bounded, least-recently-used map keeps the documents refused for their CPU cost and the
 * answers of introspection queries (prepare.ts, service.ts).
 */
import type { DocumentNode } from 'graphql';

export class DocumentCache<V = DocumentNode> {
  private readonly docs = new Map<string, V>();

  constructor(private readonly max = 256) {}

  get(query: string): V | undefined {
    const doc = this.docs.get(query);
    if (doc !== undefined) {
      // most recently used last
      this.docs.delete(query);
      this.docs.set(query, doc);
    }
    return doc;
  }

  set(query: string, doc: V): void {
    this.docs.set(query, doc);
    if (this.docs.size > this.max) this.docs.delete(this.docs.keys().next().value!);
  }

  get size(): number {
    return this.docs.size;
  }
}
