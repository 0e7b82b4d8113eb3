/**
 * The accepting side of peer connections: the Peer service (Sync streams from other agents,
 * Fetch for restore). Every call must carry a valid mesh signature; others are refused with
 * UNAUTHENTICATED before any message is read.
 */
import * as grpc from '@grpc/grpc-js';
import type { FetchRequest, FetchResponse, PeerMessage, ReceivedPeerMessage } from '../../sync/messages.js';
import { fetchChallenge, metadataNode, syncChallenge, verifyMetadata } from './auth.js';
import { decodePeerMessage, encodePeerMessage, peerWire, type Link } from './peer-wire.js';
import { toServiceError } from './status.js';

export interface PeerHandlers {
  onOpen(link: Link, claimedNode: string): void;
  onMessage(link: Link, m: ReceivedPeerMessage, bytes: number): void;
  onClose(link: Link, reason: string): void;
  fetch(req: FetchRequest): Promise<FetchResponse>;
  onAuthFailure(peer: string, reason: string): void;
}

export function addPeerService(server: grpc.Server, secret: string, h: PeerHandlers): { closeAll(): void } {
  const live = new Set<Link>();
  server.addService(peerWire().service, {
    Sync: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      const node = metadataNode(call.metadata);
      const bad = verifyMetadata(secret, call.metadata, syncChallenge(node));
      if (bad) {
        h.onAuthFailure(call.getPeer(), bad);
        call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: `mesh authentication failed: ${bad}` });
        return;
      }
      let open = true;
      const link: Link = {
        kind: 'in',
        address: call.getPeer(),
        peerId: undefined,
        get open() {
          return open;
        },
        send(m: PeerMessage) {
          return open ? link.sendEncoded(encodePeerMessage(m)) : 0;
        },
        sendEncoded(b: Buffer) {
          if (!open) return 0;
          call.write(b);
          return b.length;
        },
        close() {
          finish('closed locally');
          call.end();
        },
      };
      const finish = (reason: string) => {
        if (!open) return;
        open = false;
        live.delete(link);
        h.onClose(link, reason);
      };
      live.add(link);
      call.on('data', (b: Buffer) => {
        let m: ReceivedPeerMessage;
        try {
          m = decodePeerMessage(b);
        } catch (err) {
          finish(`undecodable message: ${(err as Error).message}`);
          call.end();
          return;
        }
        h.onMessage(link, m, b.length);
      });
      call.on('end', () => {
        finish('stream ended by the peer');
        call.end();
      });
      call.on('error', (err: Error) => finish(err.message));
      call.on('cancelled', () => finish('cancelled by the peer'));
      h.onOpen(link, node);
    },
    Fetch: (call: grpc.ServerUnaryCall<FetchRequest, FetchResponse>, cb: grpc.sendUnaryData<FetchResponse>) => {
      const r = call.request;
      const node = metadataNode(call.metadata);
      const bad = verifyMetadata(secret, call.metadata, fetchChallenge(node, r.function, r.object, r.name));
      if (bad) {
        h.onAuthFailure(call.getPeer(), bad);
        return cb({ code: grpc.status.UNAUTHENTICATED, details: `mesh authentication failed: ${bad}` });
      }
      h.fetch(r).then(
        (res) => cb(null, res),
        (err: unknown) => cb(toServiceError(err)),
      );
    },
  });
  return {
    closeAll() {
      for (const l of [...live]) l.close();
    },
  };
}
