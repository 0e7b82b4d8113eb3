/**
 * A real 3-node (or 5-node) nats-server cluster for tests and benchmarks, rendered by the one
 * renderer (nats-config.ts) with per-node identities (identity.ts): routes over mutual TLS,
 * clients by nkey. Two placements:
 *
 * - `netns`: each server in its own network namespace `<prefix>-n<i>` on a bridge `<prefix>-br`
 *   (root); partition(i) drops node i's traffic to and from the other servers with iptables
 *   inside its namespace, while clients (the host, on the bridge) still reach it: a client of
 *   node i is then on the minority side.
 * - loopback: separate processes on 127.0.0.1 ports (no root; no partitions).
 *
 * kill(i) is SIGKILL; start(i) starts the server again on its store directory.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nkeyAuthenticator } from '@nats-io/nats-core';
import { fromSeed } from '@nats-io/nkeys';
import { createTestNetwork, freePort, httpOk, inNetns, runInNetns, type Service, startService, tail, type TestNetwork, waitFor } from '@syncmesh-edge/lab';
import { nkeyFromSeed, selfSignedCert, writeEd25519Pem } from '../identity.js';
import { type NatsSpec, renderNatsConfig } from '../nats-config.js';

export interface ClusterOptions {
  /** Names of namespaces and interfaces start with it (netns placement); 1-8 characters. */
  readonly prefix: string;
  readonly nodes?: number;
  /** Network namespaces (root) or loopback processes. */
  readonly netns: boolean;
  /** Working directory (configs, stores, logs). */
  readonly dir: string;
  readonly natsBin: string;
  /** Second octet of the test subnet 10.<second>.y.0/24 (netns). */
  readonly subnetSecond?: number;
}

export interface ClusterNode {
  readonly name: string;
  readonly host: string;
  readonly clientPort: number;
  readonly monitorPort: number;
  readonly routePort: number;
  readonly url: string;
  readonly netns: string | null;
  readonly config: string;
}

export class NatsCluster {
  readonly nodes: ClusterNode[] = [];
  /** The test clients' nkey seed (SU…) and public key. */
  readonly clientSeed: string;
  private readonly procs = new Map<number, Service>();
  private readonly partitioned = new Set<number>();
  private network: TestNetwork | null = null;

  private constructor(
    readonly opts: ClusterOptions,
    clientSeed: string,
  ) {
    this.clientSeed = clientSeed;
  }

  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  /** The authenticator of the test clients (nats.js connect option). */
  authenticator(): ReturnType<typeof nkeyAuthenticator> {
    return nkeyAuthenticator(new TextEncoder().encode(this.clientSeed));
  }

  static async start(opts: ClusterOptions): Promise<NatsCluster> {
    const n = opts.nodes ?? 3;
    const clientSeed = nkeyFromSeed(randomBytes(32));
    const c = new NatsCluster(opts, clientSeed);
    mkdirSync(opts.dir, { recursive: true });
    try {
      let hosts: string[];
      if (opts.netns) {
        c.network = await createTestNetwork(opts.prefix, opts.subnetSecond ?? 57, n);
        hosts = [...c.network.hosts];
      } else {
        hosts = Array.from({ length: n }, () => '127.0.0.1');
      }
      const ports: { client: number; monitor: number; route: number }[] = [];
      for (let i = 0; i < n; i++) {
        ports.push(
          opts.netns ? { client: 4222, monitor: 8222, route: 6222 } : { client: await freePort(), monitor: await freePort(), route: await freePort() },
        );
      }
      // identities: one Ed25519 key per node, its certificate, and the bundle of all of them
      const certs: string[] = [];
      for (let i = 0; i < n; i++) {
        const key = join(opts.dir, `node-${i}.key.pem`);
        writeEd25519Pem(randomBytes(32), key);
        const cert = join(opts.dir, `node-${i}.cert.pem`);
        selfSignedCert(key, cert, `node-${i}`, [hosts[i]!]);
        certs.push(cert);
      }
      const bundle = join(opts.dir, 'core-bundle.pem');
      writeFileSync(bundle, certs.map((f) => readFileSync(f, 'utf8')).join(''));
      const users = [fromSeed(new TextEncoder().encode(clientSeed)).getPublicKey()];
      for (let i = 0; i < n; i++) {
        const p = ports[i]!;
        const spec: NatsSpec = {
          server_name: `node-${i}`,
          role: 'core',
          client: { host: opts.netns ? '0.0.0.0' : '127.0.0.1', port: p.client },
          monitor: { host: opts.netns ? '0.0.0.0' : '127.0.0.1', port: p.monitor },
          jetstream: { store_dir: join(opts.dir, `store-${i}`), domain: 'mesh' },
          users,
          ...(n > 1
            ? {
                cluster: {
                  name: 'syncmesh',
                  host: hosts[i]!,
                  port: p.route,
                  routes: hosts.flatMap((h, j) => (j === i ? [] : [`${h}:${ports[j]!.route}`])),
                  tls: { cert_file: certs[i]!, key_file: join(opts.dir, `node-${i}.key.pem`), ca_file: bundle },
                },
              }
            : {}),
        };
        const config = join(opts.dir, `node-${i}.conf`);
        writeFileSync(config, renderNatsConfig(spec));
        c.nodes.push({
          name: `node-${i}`,
          host: hosts[i]!,
          clientPort: p.client,
          monitorPort: p.monitor,
          routePort: p.route,
          url: `nats://${hosts[i]}:${p.client}`,
          netns: c.network?.namespaces[i] ?? null,
          config,
        });
      }
      for (let i = 0; i < n; i++) c.startNode(i);
      await c.waitReady();
      return c;
    } catch (err) {
      await c.stop();
      throw err;
    }
  }

  private startNode(i: number): void {
    const node = this.nodes[i]!;
    const argv = [this.opts.natsBin, '-c', node.config];
    const svc = startService(node.name, node.netns ? inNetns(node.netns, argv) : argv, join(this.opts.dir, `${node.name}.log`), process.env);
    this.procs.set(i, svc);
  }

  /** Waits until every running server reports JetStream healthy (meta leader known, streams current). */
  async waitReady(timeoutMs = 60_000): Promise<void> {
    for (const [i, svc] of this.procs) {
      const node = this.nodes[i]!;
      await waitFor(
        `${node.name} healthz`,
        () => httpOk(`http://${node.host}:${node.monitorPort}/healthz`),
        timeoutMs,
        () => {
          if (svc.exited()) throw new Error(`${node.name} exited: ${tail(svc.log, 10)}`);
        },
      );
    }
  }

  /** SIGKILL node i. */
  async kill(i: number): Promise<void> {
    const svc = this.procs.get(i);
    if (!svc) return;
    this.procs.delete(i);
    svc.child.kill('SIGKILL');
    await svc.stop(0);
  }

  /** Starts node i again (after kill) on its store. */
  async restart(i: number): Promise<void> {
    if (this.procs.has(i)) return;
    this.startNode(i);
    const node = this.nodes[i]!;
    await waitFor(`${node.name} healthz`, () => httpOk(`http://${node.host}:${node.monitorPort}/healthz`), 60_000);
  }

  /** Cuts node i off from the other servers (both directions); clients still reach it. */
  async partition(i: number): Promise<void> {
    const node = this.nodes[i]!;
    if (!node.netns) throw new Error('partitions need the netns placement (root)');
    for (const [j, other] of this.nodes.entries()) {
      if (j === i) continue;
      await runInNetns(node.netns, ['iptables', '-w', '-A', 'INPUT', '-s', other.host, '-j', 'DROP']);
      await runInNetns(node.netns, ['iptables', '-w', '-A', 'OUTPUT', '-d', other.host, '-j', 'DROP']);
    }
    this.partitioned.add(i);
  }

  async heal(i: number): Promise<void> {
    const node = this.nodes[i]!;
    if (!node.netns || !this.partitioned.has(i)) return;
    await runInNetns(node.netns, ['iptables', '-w', '-F', 'INPUT']);
    await runInNetns(node.netns, ['iptables', '-w', '-F', 'OUTPUT']);
    this.partitioned.delete(i);
  }

  /** Stops every server and removes the namespaces and the bridge. Safe to call twice. */
  async stop(): Promise<void> {
    for (const [i, svc] of [...this.procs]) {
      this.procs.delete(i);
      await svc.stop(2_000);
    }
    await this.network?.remove();
  }
}
