#!/usr/bin/env node
/**
 * The function's server (of-watchdog http mode, upstream on http_port, default 3000): the SDK
 * registers this replica with the node's MISO agent on start and unregisters it on SIGTERM.
 */
import { runFunction } from '@syncmesh-edge/miso-sdk';
import { handler } from './handler.js';

const server = await runFunction(handler, { host: process.env['MISO_FN_HOST'] ?? '127.0.0.1' });
process.stdout.write(`READY http=${server.port} function=${server.config.fn}\n`);
