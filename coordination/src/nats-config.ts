/**
 * The one renderer of a node's nats-server configuration (the test cluster, the bench and, in
 * phase 2, the node's stack use it). A specification (JSON, validated with zod) says what the
 * node is; the template below is the whole configuration. Two roles:
 *
 * - core: one of the 3-5 servers of the mesh's cluster (or the only one: no `cluster`). JetStream domain `mesh` (coordination
 *   buckets and streams, R3), routes to the other core servers over mutual TLS (each node's
 *   self-signed Ed25519 certificate, trusted through the bundle of every core node's
 *   certificate; see identity.ts), and a leaf node listener (TLS) for the other nodes.
 * - leaf: every other node. Its own JetStream domain (its async queue stays local), one leaf
 *   node connection to the core servers, authenticated by the node's nkey (its Ed25519 seed,
 *   read from an included file so the configuration itself holds no secret).
 *
 * Clients (the gateway, the async worker, functions) and leaf nodes authenticate with nkeys:
 * `users` lists the public keys allowed.
 */
import { z } from 'zod';
import { CoordinationComponentError, ERROR_CODES } from './errors.js';

const name = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, '1 to 64 letters, digits, _ or -');
const host = z.string().regex(/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)$/, 'an IP address or host name');
const port = z.number().int().min(1).max(65535);
const path = z.string().regex(/^\/[^\s"\\]*$/, 'an absolute path without spaces, quotes or backslashes');
const relPath = z.string().regex(/^[A-Za-z0-9._-]+$/, 'a file name beside the configuration');
const hostPort = z.string().regex(/^[^\s/"]+:\d{1,5}$/, 'host:port');
const nkeyUser = z.string().regex(/^U[A-Z2-7]{55}$/, 'a public user nkey (U followed by 55 base32 characters)');
const size = z.string().regex(/^\d+(KB|MB|GB|TB)?$/, 'bytes, or a size like 64MB or 1GB');
const tls = z.object({ cert_file: path, key_file: path, ca_file: path }).strict();
/** The leaf node listener proves the core to the leaf; the leaf proves itself with its nkey. */
const serverTls = z.object({ cert_file: path, key_file: path }).strict();

export const NatsSpecSchema = z
  .object({
    server_name: name,
    role: z.enum(['core', 'leaf']),
    client: z.object({ host, port }).strict(),
    monitor: z.object({ host, port }).strict().optional(),
    jetstream: z
      .object({
        store_dir: path,
        domain: name,
        max_memory_store: size.default('64MB'),
        max_file_store: size.default('1GB'),
        /**
         * How often JetStream fsyncs (Go duration), or "always" (default): every Raft append is on
         * disk before the server acknowledges it. A kill -9 loses nothing either way (the page
         * cache survives the process), but a power cut loses what was not synced, on every replica
         * that lost power at once: with nats-server's 2m, writes the SDK saw acknowledged
         * (nats-server issue 7564). An edge node's power is cut far more often than a data
         * centre's; a duration trades that for fewer writes to the SD card.
         */
        sync_interval: z
          .string()
          .regex(/^(always|\d+(ms|s|m))$/, '"always" or a duration like 2m')
          .default('always'),
      })
      .strict(),
    users: z.array(nkeyUser).min(1, 'at least one client nkey'),
    cluster: z
      .object({
        name,
        host,
        port,
        /** The other core servers' route addresses. */
        routes: z.array(hostPort).min(1).max(4),
        tls,
        /** A route that answers no ping for ping_interval x ping_max is closed: a cut link is noticed in seconds (nats-server's default: 2 min x 2). */
        ping_interval: z
          .string()
          .regex(/^\d+(ms|s|m)$/, 'a duration like 1s')
          .default('1s'),
        ping_max: z.number().int().min(1).max(10).default(3),
      })
      .strict()
      .optional(),
    leafnodes: z
      .object({
        /** core: accept leaf nodes here */
        listen: z.object({ host, port, tls: serverTls }).strict().optional(),
        /** leaf: connect to these core servers' leaf node ports */
        remotes: z.array(hostPort).min(1).optional(),
        /** leaf: file beside the configuration that sets NODE_SEED (the node's nkey seed); mode 0600 */
        seed_include: relPath.optional(),
        /** leaf: the bundle of core certificates to trust */
        ca_file: path.optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    const issue = (message: string) => ctx.addIssue({ code: 'custom', message });
    if (s.role === 'core') {
      if (s.leafnodes?.remotes) issue('a core server accepts leaf nodes (leafnodes.listen); remotes are for role leaf');
    } else {
      if (s.cluster) issue('a leaf server has no cluster: it joins through leafnodes.remotes');
      if (!s.leafnodes?.remotes || !s.leafnodes.seed_include || !s.leafnodes.ca_file) issue('a leaf server needs leafnodes.remotes, seed_include and ca_file');
      if (s.leafnodes?.listen) issue('a leaf server does not accept leaf nodes');
      if (s.jetstream.domain === 'mesh') issue('a leaf server has its own JetStream domain, not the core cluster\'s "mesh"');
    }
  });

export type NatsSpec = z.input<typeof NatsSpecSchema>;

/** Validates a specification (EDGE_COORDINATION_NATS_SPEC naming every problem). */
export function parseNatsSpec(spec: unknown): z.output<typeof NatsSpecSchema> {
  const r = NatsSpecSchema.safeParse(spec);
  if (!r.success) {
    const problems = r.error.issues.map((i) => `${i.path.join('.') || '(spec)'}: ${i.message}`).join('; ');
    throw new CoordinationComponentError(ERROR_CODES.NATS_SPEC, `invalid nats-server specification: ${problems}`);
  }
  return r.data;
}

const q = (s: string) => JSON.stringify(s);
/** A TLS block; with a ca_file the peer must present a certificate it signs (mutual TLS). */
const tlsBlock = (t: { cert_file: string; key_file: string; ca_file?: string }, indent: string) => [
  `${indent}tls {`,
  `${indent}  cert_file: ${q(t.cert_file)}`,
  `${indent}  key_file: ${q(t.key_file)}`,
  ...(t.ca_file ? [`${indent}  ca_file: ${q(t.ca_file)}`, `${indent}  verify: true`] : []),
  `${indent}  timeout: 3`,
  `${indent}}`,
];

/** The nats-server configuration of a specification. */
export function renderNatsConfig(spec: unknown): string {
  const s = parseNatsSpec(spec);
  const out: string[] = [
    `# nats-server configuration of ${s.server_name} (${s.role}), rendered by coordination/src/nats-config.ts: do not edit.`,
    `server_name: ${q(s.server_name)}`,
    `listen: ${q(`${s.client.host}:${s.client.port}`)}`,
  ];
  if (s.monitor) out.push(`http: ${q(`${s.monitor.host}:${s.monitor.port}`)}`);
  if (s.role === 'leaf') out.push(`include ${q(s.leafnodes?.seed_include ?? '')}`);
  out.push(
    'jetstream {',
    `  store_dir: ${q(s.jetstream.store_dir)}`,
    `  domain: ${q(s.jetstream.domain)}`,
    `  max_memory_store: ${s.jetstream.max_memory_store}`,
    `  max_file_store: ${s.jetstream.max_file_store}`,
    `  sync_interval: ${q(s.jetstream.sync_interval)}`,
    '}',
    'authorization {',
    '  users: [',
    ...s.users.map((u) => `    { nkey: ${q(u)} }`),
    '  ]',
    '}',
  );
  if (s.cluster) {
    out.push(
      'cluster {',
      `  name: ${q(s.cluster.name)}`,
      `  listen: ${q(`${s.cluster.host}:${s.cluster.port}`)}`,
      ...tlsBlock(s.cluster.tls, '  '),
      `  ping_interval: ${q(s.cluster.ping_interval)}`,
      `  ping_max: ${s.cluster.ping_max}`,
      '  routes: [',
      ...s.cluster.routes.map((r) => `    ${q(`nats-route://${r}`)}`),
      '  ]',
      '}',
    );
  }
  if (s.leafnodes?.listen) {
    out.push('leafnodes {', `  listen: ${q(`${s.leafnodes.listen.host}:${s.leafnodes.listen.port}`)}`, ...tlsBlock(s.leafnodes.listen.tls, '  '), '}');
  }
  if (s.leafnodes?.remotes) {
    out.push(
      'leafnodes {',
      '  remotes: [',
      '    {',
      `      urls: [${s.leafnodes.remotes.map((r) => q(`tls://${r}`)).join(', ')}]`,
      '      nkey: $NODE_SEED',
      `      tls { ca_file: ${q(s.leafnodes.ca_file ?? '')} }`,
      '    }',
      '  ]',
      '}',
    );
  }
  return `${out.join('\n')}\n`;
}
