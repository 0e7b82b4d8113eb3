#!/usr/bin/env node
/**
 * The server of a function built from the repository's templates (template/miso-node20,
 * template/syncmesh-query-node20): the entry point of their base image `fn-node20`
 * (images/fn-node20), behind of-watchdog in http mode. It imports the user's handler module and
 * serves it with the node20 template's (event, context) contract (serveFunction).
 *
 *   FUNCTION_HANDLER  /home/app/function/handler.js   the handler module (export `handler`, or default)
 *   FUNCTION_MISO     true                            false: no MISO agent (the handler gets no objects)
 *   MISO_FUNCTION     (set by the node's provider for a function labelled com.syncmesh.miso=true;
 *                     else the container's host name, which faasd sets to the function's name)
 */
import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import type { Handler } from './runtime.js';
import { runFunction } from './runtime.js';

const file = process.env['FUNCTION_HANDLER'] ?? '/home/app/function/handler.js';
const agent = (process.env['FUNCTION_MISO'] ?? 'true') !== 'false';
let mod: { handler?: unknown; default?: unknown };
try {
  mod = (await import(pathToFileURL(file).href)) as typeof mod;
} catch (err) {
  process.stderr.write(`cannot load the function's handler ${file}: ${(err as Error).message}\n`);
  process.exit(1);
}
const handler = (mod.handler ?? mod.default) as Handler | undefined;
if (typeof handler !== 'function') {
  process.stderr.write(`${file} must export a function named handler (export const handler = async (event, context) => ...)\n`);
  process.exit(1);
}
const env = { ...process.env, MISO_FUNCTION: process.env['MISO_FUNCTION'] ?? hostname().replace(/\.\d+$/, '') };
// a handler's thrown error goes to stderr (the function's log); the caller gets a coded 500
const server = await runFunction(handler, { env, agent, host: '127.0.0.1' });
process.stdout.write(`READY http=${server.port} function=${agent ? server.config.fn : '(no MISO agent)'}\n`);
