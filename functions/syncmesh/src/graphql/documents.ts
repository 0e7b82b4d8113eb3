/**
 * Parsed and validated GraphQL documents by query text. The same query text arrives again and
 * again (a dashboard's refresh, and every node of a fan-out parses the entry's query), and
 * validation walks the whole document with every rule: about as much CPU as answering a small
 * query. Only documents that passed validation are kept; graphql-js never mutates them.
 */
import type { DocumentNode } from 'graphql';

export class DocumentCache {
  private readonly docs = new Map<string, DocumentNode>();

  constructor(private readonly max = 256) {}

  get(query: string): DocumentNode | undefined {
    const doc = this.docs.get(query);
    if (doc) {
      // most recently used last
      this.docs.delete(query);
      this.docs.set(query, doc);
    }
    return doc;
  }

  set(query: string, doc: DocumentNode): void {
    this.docs.set(query, doc);
    if (this.docs.size > this.max) this.docs.delete(this.docs.keys().next().value!);
  }

  get size(): number {
    return this.docs.size;
  }
}
