/**
 * What runs on one node: the same binaries and configuration variables as on a real appliance;
 * only the supervisor differs (here: detached processes, in the node's namespace when isolated).
 * The change-stream listener and the MISO agent add their entries to NODE_SERVICES when they land.
 */
import { join } from 'node:path';
import { testServerCommand } from '@syncmesh-edge/mongo-test-server';
import type { MeshConfig } from './config.js';
import type { MeshPlan, NodePlan } from './plan.js';
import { httpOk, tcpOpen } from './sys.js';

export interface ServiceContext {
  readonly cfg: MeshConfig;
  readonly plan: MeshPlan;
  readonly node: NodePlan;
  /** File holding the mesh secret (SYNCMESH_MESH_SECRET_FILE on every node). */
  readonly secretFile: string;
  readonly forwardMode: 'parallel' | 'sequential';
}

export interface NodeService {
  /** Short role name: process logs are logs/<node>.<role>.log. */
  readonly role: string;
  /** Command line (run inside the node's namespace when isolated). */
  argv(ctx: ServiceContext): string[];
  /** Service environment (added to a minimal PATH/LANG environment). */
  env(ctx: ServiceContext): Record<string, string>;
  /** One readiness probe; polled with a deadline. */
  ready(ctx: ServiceContext): Promise<boolean>;
}

/** Bind address of node services: every address inside a namespace, loopback otherwise. */
function bindAddr(ctx: ServiceContext): string {
  return ctx.plan.isolation === 'netns' ? '0.0.0.0' : ctx.node.addr;
}

export const mongoService: NodeService = {
  role: 'mongo',
  argv: (ctx) => testServerCommand({ bind: bindAddr(ctx), port: ctx.node.mongoPort, ...(ctx.cfg.mongoStorage === 'disk' ? { dataDir: join(ctx.node.dir, 'db') } : {}), heapMb: ctx.cfg.mongoHeapMb }),
  env: () => ({}),
  ready: (ctx) => tcpOpen(ctx.node.addr, ctx.node.mongoPort),
};

export const functionService: NodeService = {
  role: 'function',
  argv: (ctx) => [process.execPath, ctx.cfg.functionMain],
  env: (ctx) => ({
    PORT: String(ctx.node.functionPort),
    HOST: bindAddr(ctx),
    MONGODB_URI: ctx.node.localMongoUri,
    SYNCMESH_NODE_ID: ctx.node.id,
    SYNCMESH_MESH_SECRET_FILE: ctx.secretFile,
    SYNCMESH_NODE_TIMEOUT_MS: String(ctx.cfg.nodeTimeoutMs),
    SYNCMESH_DEADLINE_MS: String(ctx.cfg.deadlineMs),
    SYNCMESH_FORWARD_MODE: ctx.forwardMode,
    LOG_LEVEL: ctx.cfg.nodeLogLevel,
    ...(ctx.cfg.replayWindowMs !== undefined ? { SYNCMESH_REPLAY_WINDOW_MS: String(ctx.cfg.replayWindowMs) } : {}),
  }),
  ready: (ctx) => httpOk(`http://${ctx.node.addr}:${ctx.node.functionPort}/readyz`),
};

/** Started in this order on every node; data is loaded between MongoDB and the function. */
export const DATABASE_SERVICES: readonly NodeService[] = [mongoService];
export const NODE_SERVICES: readonly NodeService[] = [functionService];
