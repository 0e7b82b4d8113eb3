/**
 * Builds an agent and its gRPC endpoints without listening: the SDK service (+ health) for the
 * local socket, the Peer service (+ health) for other agents, and the metrics endpoint.
 * `start()` binds, loads state and joins the mesh; `close()` drains within the services' drain
 * deadline (DEFAULT_DRAIN_TIMEOUT_MS, then the servers are forced down).
 */
import { createServer, type Server as HttpServer, type ServerResponse } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { MeshKeys } from '@syncmesh-edge/mesh-auth';
import { MisoAgent } from './agent/agent.js';
import { AgentMetrics } from './agent/metrics.js';
import type { AgentConfig } from './config.js';
import { MdnsDiscovery } from './discovery/mdns.js';
import { squashError } from '@syncmesh-edge/log';
import { DEFAULT_DRAIN_TIMEOUT_MS, replyError } from '@syncmesh-edge/log/service';
import { MisoError, type MisoErrorCode } from './errors.js';
import type { Logger } from '@syncmesh-edge/log';
import { MemoryStateStore } from './store/memory.js';
import type { StateStore } from './store/types.js';
import { HealthService } from './transport/grpc/health.js';
import { sdkServerOptions, serverOptions, setServerNoDelay } from './transport/grpc/options.js';
import { addPeerService } from './transport/grpc/peer-server.js';
import { FunctionSockets } from './transport/grpc/function-sockets.js';
import { addSdkService, sdkBindAddress } from './transport/grpc/sdk-server.js';

export interface AgentApp {
  readonly agent: MisoAgent;
  readonly metrics: AgentMetrics;
  /** Binds the endpoints, loads state, dials peers. Resolves with the bound addresses. */
  start(): Promise<{ peerAddress: string; boundAddress: string; sdkAddress: string; metricsPort: number }>;
  close(): Promise<void>;
}

function bind(server: grpc.Server, address: string): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
  );
}

/**
 * Builds the agent. Async only because the MongoDB driver is loaded on demand: an agent without
 * MONGODB_URI does not carry it in memory.
 */
export async function buildAgentApp(config: AgentConfig, log: Logger): Promise<AgentApp> {
  const metrics = new AgentMetrics();
  let agent!: MisoAgent;
  let store: StateStore;
  if (config.mongodbUri) {
    const { MongoStateStore } = await import('./store/mongo.js');
    store = new MongoStateStore(config.mongodbUri, config.mongoDb, config.persistDelayMs, (f, o, n) => agent.snapshot(f, o, n), log.child({ module: 'store' }));
  } else {
    store = new MemoryStateStore();
  }
  const keys = new MeshKeys(config.meshSecret);
  agent = new MisoAgent({ config, log, store, metrics, keys });
  const health = new HealthService();
  const sdkServer = new grpc.Server(sdkServerOptions(config.maxMessageBytes));
  const peerServer = new grpc.Server(serverOptions(config.maxMessageBytes));
  setServerNoDelay(peerServer);
  const sdkLog = log.child({ module: 'sdk' });
  const sdkHooks = {
    onInternalError: (method: string, err: unknown) => sdkLog.error({ err, method }, 'internal error answering an SDK call'),
    onCall: (method: string, ok: boolean) => metrics.ops.inc(1, method, ok ? 'ok' : 'error'),
  };
  addSdkService(sdkServer, agent, sdkHooks);
  const functionSockets = config.functionSocketsDir
    ? new FunctionSockets(config.functionSocketsDir, agent, sdkHooks, config.maxMessageBytes, log.child({ module: 'function-sockets' }))
    : undefined;
  const peers = addPeerService(peerServer, { nodeId: () => agent.nodeId, keys }, agent);
  health.addTo(sdkServer);
  health.addTo(peerServer);
  let metricsServer: HttpServer | undefined;
  let mdns: MdnsDiscovery | undefined;
  let sdkPath: string | undefined;
  let closing: Promise<void> | undefined;

  return {
    agent,
    metrics,
    async start() {
      if (!config.mongodbUri) log.warn('MONGODB_URI is not set: state is kept in memory only and lost on restart');
      await agent.load();
      const peerPort = await bind(peerServer, config.grpcAddr);
      const host = config.grpcAddr.slice(0, config.grpcAddr.lastIndexOf(':'));
      agent.advertiseAddress = config.advertiseAddr ?? `${host}:${peerPort}`;
      const sdkAddr = sdkBindAddress(config.sdkSocket);
      if (sdkAddr.startsWith('unix:')) {
        sdkPath = sdkAddr.slice('unix:'.length);
        mkdirSync(dirname(sdkPath), { recursive: true });
        rmSync(sdkPath, { force: true });
      }
      const sdkPort = await bind(sdkServer, sdkAddr);
      const sdkAddress = sdkPath ? `unix:${sdkPath}` : `${sdkAddr.slice(0, sdkAddr.lastIndexOf(':'))}:${sdkPort}`;
      health.set('', 'SERVING');
      health.set('miso.sdk.v1.Miso', 'SERVING');
      health.set('miso.peer.v2.Peer', 'SERVING');
      agent.start(config.peers);
      functionSockets?.start();
      if (config.mdns) {
        mdns = new MdnsDiscovery({
          nodeId: agent.nodeId,
          port: peerPort,
          interface: config.mdnsInterface,
          log: log.child({ module: 'mdns' }),
          // The record's node id is a claim: the link is dropped unless the handshake authenticates it.
          onPeer: (address, nodeId) => agent.addPeerAddress(address, nodeId),
          onGone: (address) => agent.removePeerAddress(address),
        });
        mdns.start();
      }
      let metricsPort = 0;
      if (config.metricsPort !== undefined) {
        // errors as coded JSON, as the function's and the listener's endpoints answer them
        const refuse = (res: ServerResponse, status: number, code: MisoErrorCode, message: string) => replyError(res, status, code, message, ['GET /metrics']);
        metricsServer = createServer((req, res) => {
          const path = (req.url ?? '/').split('?')[0];
          if (path !== '/metrics') return refuse(res, 404, 'EDGE_MISO_NOT_FOUND', `no endpoint at ${req.method} ${path}`);
          if (req.method !== 'GET' && req.method !== 'HEAD')
            return refuse(res, 405, 'EDGE_MISO_BAD_REQUEST', `${req.method} is not supported: scrape with GET`);
          metrics.registry.metrics().then(
            (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
            (err: unknown) => refuse(res, 500, 'EDGE_MISO_UNAVAILABLE', `the metrics could not be collected: ${(err as Error).message}`),
          );
        });
        await new Promise<void>((resolve, reject) => {
          metricsServer!.once('error', reject);
          metricsServer!.listen(config.metricsPort, config.metricsAddr, () => resolve());
        });
        const a = metricsServer.address();
        metricsPort = typeof a === 'object' && a ? a.port : 0;
      }
      log.info({ node: agent.nodeId, peerAddress: agent.advertiseAddress, sdkAddress, metricsPort }, 'MISO agent started');
      return { peerAddress: agent.advertiseAddress, boundAddress: `${host}:${peerPort}`, sdkAddress, metricsPort };
    },
    close() {
      closing ??= (async () => {
        health.set('', 'NOT_SERVING');
        await mdns?.stop();
        functionSockets?.close();
        await agent.close();
        peers.closeAll();
        health.close();
        const drain = (s: grpc.Server) =>
          new Promise<void>((resolve) => {
            const t = setTimeout(() => {
              s.forceShutdown();
              resolve();
            }, DEFAULT_DRAIN_TIMEOUT_MS);
            s.tryShutdown(() => {
              clearTimeout(t);
              resolve();
            });
          });
        await Promise.all([drain(sdkServer), drain(peerServer)]);
        await new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve()));
        try {
          await store.close();
        } catch (err) {
          throw new MisoError('EDGE_MISO_STORE', `flushing state on shutdown failed: ${(err as Error).message}`, { cause: err });
        } finally {
          if (sdkPath) {
            // The socket file may already be gone (removed by the server); nothing to clean then.
            try {
              rmSync(sdkPath, { force: true });
            } catch (err) {
              squashError(err);
            }
          }
        }
      })();
      return closing;
    },
  };
}
