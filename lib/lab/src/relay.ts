/**
 * Points where the lab cuts and heals TCP connections on loopback, without touching the host's
 * firewall: a relay (the address others use to reach a process) and an HTTP CONNECT proxy (what
 * a process's outgoing connections go through, e.g. gRPC's grpc_proxy). The MISO agent's tests
 * use them for network partitions.
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** A point where connections can be cut: tracks its sockets, refuses new ones while cut. */
abstract class Cuttable {
  protected readonly sockets = new Set<Socket>();
  isCut = false;
  /** Open sockets through this point (both legs). */
  get active(): number {
    return this.sockets.size;
  }
  protected track(s: Socket): void {
    this.sockets.add(s);
    s.once('close', () => this.sockets.delete(s));
    s.on('error', () => s.destroy());
  }
  cut(): void {
    this.isCut = true;
    for (const s of this.sockets) s.destroy();
  }
  heal(): void {
    this.isCut = false;
  }
  /** Opens the upstream leg to host:port, tied to the client leg (one closing closes both). */
  protected upstream(client: Socket, hostPort: string, onConnect: (up: Socket) => void): void {
    const i = hostPort.lastIndexOf(':');
    const up = connect(Number(hostPort.slice(i + 1)), hostPort.slice(0, i));
    this.track(up);
    up.once('connect', () => onConnect(up));
    client.once('close', () => up.destroy());
    up.once('close', () => client.destroy());
  }
  protected server: Server | HttpServer | undefined;
  port = 0;
  protected async listen(server: Server | HttpServer): Promise<void> {
    this.server = server;
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as { port: number }).port;
  }
  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** A TCP relay 127.0.0.1:<port> -> target: the address others use to reach one process. */
export class Relay extends Cuttable {
  target = '';
  async start(target?: string): Promise<this> {
    if (target) this.target = target;
    await this.listen(
      createServer((c) => {
        this.track(c);
        if (this.isCut || !this.target) return c.destroy();
        this.upstream(c, this.target, (up) => c.pipe(up).pipe(c));
      }),
    );
    return this;
  }
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }
}

/** An HTTP CONNECT proxy a process's outgoing connections use (e.g. an agent's grpc_proxy). */
export class ConnectProxy extends Cuttable {
  async start(): Promise<this> {
    const server = createHttpServer((_req, res) => res.writeHead(405).end());
    server.on('connect', (req, c: Socket) => {
      this.track(c);
      if (this.isCut) {
        c.end('HTTP/1.1 503 Service Unavailable\r\n\r\n');
        return;
      }
      this.upstream(c, req.url ?? '', (up) => {
        c.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        c.pipe(up).pipe(c);
      });
    });
    await this.listen(server);
    return this;
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
}
