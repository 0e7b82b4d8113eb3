#!/usr/bin/env -S node --max-semi-space-size=1
/**
 * The agent process: reads the environment (config.ts), starts, prints one READY line
 * (`READY peer=<advertised host:port> bound=<host:port> sdk=<address> metrics=<port> node=<id>`) for supervisors and tests,
 * and drains on SIGTERM/SIGINT within the services' drain deadline. Start, signals, the deadline
 * and the exit codes (78 configuration, 1 failed to start) are runService's
 * (@syncmesh-edge/log/service).
 */
import { squashError } from '@syncmesh-edge/log';
import { runService } from '@syncmesh-edge/log/service';
import { buildAgentApp } from './app.js';
import { loadConfig } from './config.js';

await runService({
  svc: 'miso-agent',
  // Logs go to stderr: stdout carries only the READY line (and misoctl's output).
  destination: 'stderr',
  loadConfig,
  logger: (config) => ({ level: config.logLevel, node: config.nodeId }),
  async start({ config, log, shutdown }) {
    const app = await buildAgentApp(config, log);
    if (process.env['MISO_EXIT_ON_STDIN_EOF'] === '1') {
      // Tests and benchmarks: exit with the parent that holds our stdin, even if it is killed.
      process.stdin.once('end', () => shutdown('stdin EOF'));
      process.stdin.resume();
    }
    let r: Awaited<ReturnType<typeof app.start>>;
    try {
      r = await app.start();
    } catch (err) {
      // Best-effort cleanup of whatever did start; the start error is what matters.
      await app.close().catch(squashError);
      throw err;
    }
    process.stdout.write(`READY peer=${r.peerAddress} bound=${r.boundAddress} sdk=${r.sdkAddress} metrics=${r.metricsPort} node=${app.agent.nodeId}\n`);
    return { stop: () => app.close() };
  },
});
