/**
 * The accepting side of peer connections: the Peer service's Sync streams from other agents.
 * A stream is handed to the agent only once the handshake (auth.ts) has authenticated both
 * sides; until then nothing but the challenge is sent and nothing else is read. Every later
 * message is sealed both ways. Restore fetches arrive on the same stream and are answered on it.
 */
import * as grpc from '@grpc/grpc-js';
import type { MeshKeys } from '@syncmesh-edge/mesh-auth';
import type { FetchRequest, FetchResponse, PeerMessage, ReceivedPeerMessage } from '../../sync/messages.js';
import { squashError } from '@syncmesh-edge/log';
import { AcceptorHandshake, HANDSHAKE_TIMEOUT_MS, type LinkCipher, type LinkRefusal } from './auth.js';
import { decodePeerMessage, encodePeerMessage, openSealed, peerWire, readHandshake, type Link } from './peer-wire.js';

export interface PeerHandlers {
  /** An authenticated inbound stream from node `authId`. */
  onOpen(link: Link, authId: string): void;
  onMessage(link: Link, m: ReceivedPeerMessage, bytes: number): void;
  onClose(link: Link, reason: string): void;
  fetch(req: FetchRequest): Promise<FetchResponse>;
  /** A handshake or a message's MAC failed; the stream is closed with UNAUTHENTICATED. */
  onAuthFailure(peer: string, refusal: LinkRefusal): void;
}

export interface PeerServiceOptions {
  nodeId(): string;
  keys: MeshKeys;
}

export function addPeerService(server: grpc.Server, o: PeerServiceOptions, h: PeerHandlers): { closeAll(): void } {
  const live = new Set<Link>();
  const pending = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
  server.addService(peerWire().service, {
    Sync: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      const address = call.getPeer();
      const handshake = new AcceptorHandshake(o.keys, o.nodeId(), address);
      let cipher: LinkCipher | undefined;
      let authId: string | undefined;
      let open = true;
      const link: Link = {
        kind: 'in',
        address,
        get authId() {
          return authId;
        },
        peerId: undefined,
        get open() {
          return open;
        },
        send(m: PeerMessage) {
          return open ? link.sendEncoded(encodePeerMessage(m)) : 0;
        },
        sendEncoded(b: Buffer) {
          if (!open || !cipher) return 0;
          const sealed = cipher.seal(b);
          call.write(sealed);
          return sealed.length;
        },
        close() {
          finish('closed locally');
          call.end();
        },
      };
      const timer = setTimeout(
        () => fail({ ok: false, code: 'EDGE_MISO_AUTH', reason: `the dialer at ${address} did not complete the handshake within ${HANDSHAKE_TIMEOUT_MS} ms` }),
        HANDSHAKE_TIMEOUT_MS,
      );
      timer.unref();
      pending.add(call);
      const finish = (reason: string) => {
        if (!open) return;
        open = false;
        clearTimeout(timer);
        pending.delete(call);
        if (live.delete(link)) h.onClose(link, reason);
      };
      const fail = (r: LinkRefusal) => {
        if (!open) return;
        h.onAuthFailure(address, r);
        finish(`${r.code}: ${r.reason}`);
        call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: `${r.code}: ${r.reason}` });
      };
      call.on('data', (b: Buffer) => {
        if (!open) return;
        if (!cipher) {
          const read = readHandshake(b, `the dialer at ${address}`);
          if (!read.ok) return fail(read);
          const m = read.message;
          if (m.body === 'auth_proof') {
            const r = handshake.onProof(m);
            if (!r.ok) return fail(r);
            clearTimeout(timer);
            pending.delete(call);
            cipher = r.cipher;
            authId = r.peerId;
            live.add(link);
            h.onOpen(link, r.peerId);
            return;
          }
          const r = handshake.onHello(m);
          if (!r.ok) return fail(r);
          call.write(encodePeerMessage(r.reply));
          return;
        }
        const sealed = openSealed(cipher, b, `'${authId}' at ${address}`);
        if (!sealed.ok) return fail(sealed);
        let m: ReceivedPeerMessage;
        try {
          m = decodePeerMessage(sealed.body);
        } catch (err) {
          finish(`undecodable message: ${(err as Error).message}`);
          call.end();
          return;
        }
        if (m.body === 'fetch_request') {
          h.fetch((m as { fetch_request: FetchRequest }).fetch_request).then(
            (res) => link.send({ fetch_response: res }),
            // The asker's deadline covers a failed fetch; the agent logged the cause.
            squashError,
          );
          return;
        }
        h.onMessage(link, m, b.length);
      });
      // A dialer that leaves after our challenge most likely refused it (its log says why).
      const leftDuringHandshake = () => {
        if (!cipher && handshake.dialer !== undefined) {
          fail({
            ok: false,
            code: 'EDGE_MISO_AUTH',
            reason: `the dialer at ${address} ('${handshake.dialer}') left during the handshake (it refused this agent: another MISO_MESH_SECRET, or it expected another node here)`,
          });
        }
      };
      call.on('end', () => {
        leftDuringHandshake();
        finish('stream ended by the peer');
        call.end();
      });
      call.on('error', (err: Error) => finish(err.message));
      call.on('cancelled', () => {
        leftDuringHandshake();
        finish('cancelled by the peer');
      });
    },
  });
  return {
    closeAll() {
      for (const l of [...live]) l.close();
      for (const c of [...pending]) c.end();
    },
  };
}
