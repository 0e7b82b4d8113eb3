/**
 * The dialling side of a peer connection: opens one Sync stream to an address, authenticates it
 * both ways (auth.ts) before anything else is sent or read, keeps it open, and reconnects with
 * capped exponential backoff and equal jitter (@syncmesh-edge/backoff) when it breaks. Restore
 * fetches travel on the same authenticated stream, each with a deadline.
 */
import * as grpc from '@grpc/grpc-js';
import { backoffDelayMs, type BackoffPolicy } from '@syncmesh-edge/backoff';
import type { MeshKeys } from '@syncmesh-edge/mesh-auth';
import type { FetchRequest, FetchResponse, PeerMessage, ReceivedPeerMessage } from '../../sync/messages.js';
import { DialerHandshake, HANDSHAKE_TIMEOUT_MS, type LinkCipher, type LinkRefusal } from './auth.js';
import { peerChannelOptions } from './options.js';
import { decodePeerMessage, encodePeerMessage, openSealed, peerWire, readHandshake, type Link } from './peer-wire.js';

export interface OutboundOptions {
  nodeId: string;
  keys: MeshKeys;
  /** The node id expected at this address (mDNS record, `id@host:port`, dial-back); undefined = any member. */
  expect: string | undefined;
  maxMessageBytes: number;
  /** Reconnect delays (DEFAULT_BACKOFF_MIN_MS and DEFAULT_BACKOFF_MAX_MS of config.ts). */
  backoff: BackoffPolicy;
  /** Called with the open link; the caller sends Hello. */
  onOpen(link: Link): void;
  onMessage(link: Link, m: ReceivedPeerMessage, bytes: number): void;
  /** Called once per broken stream, with the reason. */
  onClose(link: Link, reason: string): void;
  /** Called when the handshake or a message's MAC fails; the stream is then closed. */
  onAuthFailure(address: string, refusal: LinkRefusal): void;
}

/** Backoff attempt after a refused link: 100 ms * 2^6 is past the 5 s cap, so the retry waits 2.5 to 5 s. */
const AUTH_FAILURE_ATTEMPT = 6;
/** The code the acceptor put at the start of its UNAUTHENTICATED details. */
const REFUSAL_CODE = /^(EDGE_MISO_AUTH|EDGE_MISO_PEER_ID|EDGE_MISO_PEER_PROTOCOL): /;

interface PendingFetch {
  resolve(r: FetchResponse): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class OutboundPeer {
  private readonly client: grpc.Client;
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
  private current: Link | undefined;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private nextFetchId = 1;
  private readonly fetches = new Map<number, PendingFetch>();
  peerId: string | undefined;

  constructor(
    readonly address: string,
    private readonly opts: OutboundOptions,
  ) {
    const Ctor = peerWire().client;
    this.client = new Ctor(address, grpc.credentials.createInsecure(), peerChannelOptions(opts.maxMessageBytes));
  }

  /** The node id expected at this address, if any. */
  get expect(): string | undefined {
    return this.opts.expect;
  }

  /** The open, authenticated stream, if any. */
  get link(): Link | undefined {
    return this.current?.open && this.current.authId !== undefined ? this.current : undefined;
  }

  start(): void {
    if (!this.stopped && !this.call && !this.timer) this.connect();
  }

  /** Marks the stream healthy (Hello received): the next failure starts backoff from the bottom. */
  established(): void {
    this.attempt = 0;
  }

  private connect(): void {
    const call = (this.client as unknown as { Sync(): grpc.ClientDuplexStream<Buffer, Buffer> }).Sync();
    this.call = call;
    const handshake = new DialerHandshake(this.opts.keys, this.opts.nodeId, this.opts.expect, this.address);
    let cipher: LinkCipher | undefined;
    let authId: string | undefined;
    let open = true;
    const link: Link = {
      kind: 'out',
      address: this.address,
      get authId() {
        return authId;
      },
      peerId: this.peerId,
      get open() {
        return open;
      },
      send: (m: PeerMessage) => (open ? link.sendEncoded(encodePeerMessage(m)) : 0),
      sendEncoded: (b: Buffer) => {
        // Nothing but the handshake leaves before the link is authenticated.
        if (!open || !cipher) return 0;
        const sealed = cipher.seal(b);
        call.write(sealed);
        return sealed.length;
      },
      close: () => finish('closed locally', true),
    };
    this.current = link;
    // No challenge in time: an unreachable address as often as a stalling impostor, so this is a
    // plain reconnect (with growing backoff), not a refusal.
    const timer = setTimeout(() => finish(`no answer to the handshake within ${HANDSHAKE_TIMEOUT_MS} ms`, true), HANDSHAKE_TIMEOUT_MS);
    timer.unref();
    const finish = (reason: string, cancel: boolean) => {
      if (!open) return;
      open = false;
      clearTimeout(timer);
      if (cancel) call.cancel();
      this.call = undefined;
      for (const [id, f] of this.fetches) {
        clearTimeout(f.timer);
        this.fetches.delete(id);
        f.reject(new Error(`stream to ${this.address} closed: ${reason}`));
      }
      // Only an authenticated link was ever handed to the agent.
      if (cipher) this.opts.onClose(link, reason);
      this.scheduleReconnect();
    };
    const fail = (r: LinkRefusal) => {
      if (!open) return;
      // A refused peer is retried at the backoff's cap (an impostor or a misconfigured node does not heal in 100 ms).
      this.attempt = Math.max(this.attempt, AUTH_FAILURE_ATTEMPT);
      this.opts.onAuthFailure(this.address, r);
      finish(`${r.code}: ${r.reason}`, true);
    };
    call.on('data', (b: Buffer) => {
      if (!open) return;
      if (!cipher) {
        const h = readHandshake(b, `the agent at ${this.address}`);
        if (!h.ok) return fail(h);
        const r = handshake.onChallenge(h.message);
        if (!r.ok) return fail(r);
        clearTimeout(timer);
        call.write(encodePeerMessage(r.reply));
        cipher = r.cipher;
        authId = r.peerId;
        this.opts.onOpen(link);
        return;
      }
      const sealed = openSealed(cipher, b, `'${authId}' at ${this.address}`);
      if (!sealed.ok) return fail(sealed);
      let m: ReceivedPeerMessage;
      try {
        m = decodePeerMessage(sealed.body);
      } catch (err) {
        finish(`undecodable message: ${(err as Error).message}`, true);
        return;
      }
      if (m.body === 'fetch_response') return this.fetched((m as { fetch_response: FetchResponse }).fetch_response);
      this.opts.onMessage(link, m, b.length);
    });
    call.on('error', (err: grpc.ServiceError) => {
      const reason = `${grpc.status[err.code] ?? err.code}: ${err.details || err.message}`;
      // The acceptor refused our handshake: report it like our own refusals.
      if (!cipher && err.code === grpc.status.UNAUTHENTICATED) {
        const code = (REFUSAL_CODE.exec(err.details)?.[1] ?? 'EDGE_MISO_AUTH') as LinkRefusal['code'];
        return fail({ ok: false, code, reason: `the agent at ${this.address} refused this agent: ${err.details}` });
      }
      finish(reason, false);
    });
    call.on('end', () => finish('stream ended by the peer', true));
    call.write(encodePeerMessage(handshake.hello()));
  }

  private fetched(r: FetchResponse): void {
    const f = this.fetches.get(r.id);
    if (!f) return; // answered after its deadline: the restore went on without it
    this.fetches.delete(r.id);
    clearTimeout(f.timer);
    f.resolve(r);
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    const delay = backoffDelayMs(this.attempt++, this.opts.backoff);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped) this.connect();
    }, delay);
    this.timer.unref();
  }

  /** Restore fetch (Algorithm 2) on the authenticated stream, with a deadline. */
  fetch(req: Omit<FetchRequest, 'id'>, deadlineMs: number): Promise<FetchResponse> {
    const link = this.link;
    if (!link) return Promise.reject(new Error(`no authenticated stream to ${this.address}`));
    const id = this.nextFetchId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fetches.delete(id);
        reject(new Error(`fetch from ${this.address}: no answer within ${deadlineMs} ms`));
      }, deadlineMs);
      timer.unref();
      this.fetches.set(id, { resolve, reject, timer });
      link.send({ fetch_request: { id, ...req } });
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
