#!/usr/bin/env node
/**
 * One query from the client's namespace: the demo runs `ip netns exec <mesh>-cl node
 * demo/client.js <url> <json body> <timeout ms>` so that its traffic has the client's own
 * address and interface (the host's address is the link proxies'). Prints the TimedAnswer as JSON.
 */
import { postFunction } from '../client/client.js';

const [url, body, timeout] = process.argv.slice(2);
if (!url || !body) {
  process.stderr.write('usage: demo/client.js <function url> <json body> [timeout ms]\n');
  process.exit(2);
}
const answer = await postFunction(url, JSON.parse(body), timeout ? { timeoutMs: Number(timeout) } : {});
process.stdout.write(JSON.stringify(answer));
