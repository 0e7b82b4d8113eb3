#!/usr/bin/env -S node --max-semi-space-size=1
/**
 * The agent process: reads the environment (config.ts), starts, prints one READY line
 * (`READY peer=<advertised host:port> bound=<host:port> sdk=<address> metrics=<port> node=<id>`) for supervisors and tests,
 * and drains on SIGTERM/SIGINT within SHUTDOWN_DEADLINE_MS.
 */
import { buildAgentApp, SHUTDOWN_DEADLINE_MS } from './app.js';
import { loadConfig } from './config.js';
import { createLogger, squashError } from '@syncmesh-edge/log';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
  // Logs go to stderr: stdout carries only the READY line (and misoctl's output).
  const log = createLogger({ level: config.logLevel, node: config.nodeId, destination: 'stderr' });
  const app = await buildAgentApp(config, log);
  const shutdown = (signal: string) => {
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), SHUTDOWN_DEADLINE_MS * 2);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  if (process.env['MISO_EXIT_ON_STDIN_EOF'] === '1') {
    // Tests and benchmarks: exit with the parent that holds our stdin, even if it is killed.
    process.stdin.once('end', () => shutdown('stdin EOF'));
    process.stdin.resume();
  }
  try {
    const r = await app.start();
    process.stdout.write(`READY peer=${r.peerAddress} bound=${r.boundAddress} sdk=${r.sdkAddress} metrics=${r.metricsPort} node=${app.agent.nodeId}\n`);
  } catch (err) {
    log.fatal({ err }, 'agent failed to start');
    // Best-effort cleanup of whatever did start; the start error above is what matters.
    await app.close().catch(squashError);
    process.exit(1);
  }
}

void main();
