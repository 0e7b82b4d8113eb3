import { startTestServer, type TestServerOptions } from './server.js';

export interface MongoTarget {
  /** Connection string to use. */
  readonly uri: string;
  /** 'real' when MONGODB_URI points at a MongoDB, 'test-server' for mongo-java-server. */
  readonly kind: 'real' | 'test-server';
  /** The test server's process id (undefined for a real MongoDB). */
  readonly pid?: number | undefined;
  /** Stops the test server; a no-op for a real MongoDB. */
  stop(): Promise<void>;
}

/**
 * MONGODB_URI (a real MongoDB) when set, otherwise a fresh test server. Tests and benchmarks use
 * this so that the same code runs against both.
 */
export async function resolveMongo(env: NodeJS.ProcessEnv = process.env, opts: TestServerOptions = {}): Promise<MongoTarget> {
  const uri = env['MONGODB_URI'];
  if (uri) return { uri, kind: 'real', stop: async () => {} };
  const server = await startTestServer(opts);
  return { uri: server.uri, kind: 'test-server', pid: server.pid, stop: () => server.stop() };
}
