/**
 * The dialling side of a peer connection: opens one authenticated Sync stream to an address,
 * keeps it open, and reconnects with exponential backoff and full jitter when it breaks.
 * Also issues Fetch calls (restore) on the same channel, each with a deadline.
 */
import * as grpc from '@grpc/grpc-js';
import type { FetchRequest, FetchResponse, PeerMessage, ReceivedPeerMessage } from '../../sync/messages.js';
import { fetchChallenge, signedMetadata, syncChallenge } from './auth.js';
import { peerChannelOptions } from './options.js';
import { decodePeerMessage, encodePeerMessage, peerWire, type Link } from './peer-wire.js';

export interface OutboundOptions {
  nodeId: string;
  secret: string;
  maxMessageBytes: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  /** Called with the open link; the caller sends Hello. */
  onOpen(link: Link): void;
  onMessage(link: Link, m: ReceivedPeerMessage, bytes: number): void;
  /** Called once per broken stream, with the reason. */
  onClose(link: Link, reason: string): void;
}

/** Jittered exponential backoff ("full jitter"): uniform in [0, min(max, base * 2^attempt)]. */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, rand: () => number = Math.random): number {
  const cap = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 20));
  return Math.max(minMs / 2, Math.floor(rand() * cap));
}

export class OutboundPeer {
  private readonly client: grpc.Client;
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
  private current: Link | undefined;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  peerId: string | undefined;

  constructor(readonly address: string, private readonly opts: OutboundOptions) {
    const Ctor = peerWire().client;
    this.client = new Ctor(address, grpc.credentials.createInsecure(), peerChannelOptions(opts.maxMessageBytes));
  }

  get link(): Link | undefined {
    return this.current?.open ? this.current : undefined;
  }

  start(): void {
    if (!this.stopped && !this.call && !this.timer) this.connect();
  }

  /** Marks the stream healthy (Hello received): the next failure starts backoff from the bottom. */
  established(): void {
    this.attempt = 0;
  }

  private connect(): void {
    const md = signedMetadata(this.opts.secret, this.opts.nodeId, syncChallenge(this.opts.nodeId));
    const call = (this.client as unknown as { Sync(md: grpc.Metadata): grpc.ClientDuplexStream<Buffer, Buffer> }).Sync(md);
    this.call = call;
    let open = true;
    const link: Link = {
      kind: 'out',
      address: this.address,
      peerId: this.peerId,
      get open() {
        return open;
      },
      send: (m: PeerMessage) => (open ? link.sendEncoded(encodePeerMessage(m)) : 0),
      sendEncoded: (b: Buffer) => {
        if (!open) return 0;
        call.write(b);
        return b.length;
      },
      close: () => finish('closed locally', true),
    };
    this.current = link;
    const finish = (reason: string, cancel: boolean) => {
      if (!open) return;
      open = false;
      if (cancel) call.cancel();
      this.call = undefined;
      this.opts.onClose(link, reason);
      this.scheduleReconnect();
    };
    call.on('data', (b: Buffer) => {
      let m: ReceivedPeerMessage;
      try {
        m = decodePeerMessage(b);
      } catch (err) {
        finish(`undecodable message: ${(err as Error).message}`, true);
        return;
      }
      this.opts.onMessage(link, m, b.length);
    });
    call.on('error', (err: grpc.ServiceError) => finish(`${grpc.status[err.code] ?? err.code}: ${err.details || err.message}`, false));
    call.on('end', () => finish('stream ended by the peer', true));
    this.opts.onOpen(link);
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    const delay = backoffDelay(this.attempt++, this.opts.backoffMinMs, this.opts.backoffMaxMs);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped) this.connect();
    }, delay);
    this.timer.unref();
  }

  /** Restore fetch (Algorithm 2) with a deadline. */
  fetch(req: FetchRequest, deadlineMs: number): Promise<FetchResponse> {
    const md = signedMetadata(this.opts.secret, this.opts.nodeId, fetchChallenge(this.opts.nodeId, req.function, req.object, req.name));
    return new Promise((resolve, reject) => {
      (this.client as unknown as {
        Fetch(r: FetchRequest, md: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: FetchResponse) => void): void;
      }).Fetch(req, md, { deadline: Date.now() + deadlineMs }, (err, res) => (err ? reject(err) : resolve(res!)));
    });
  }

  /** Stops for good: closes the stream and the channel. Safe to call twice. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.current?.close();
    this.client.close();
  }
}
