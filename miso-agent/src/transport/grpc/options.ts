/** Channel and server options shared by every agent gRPC endpoint. */
import type { ChannelOptions } from '@grpc/grpc-js';

/**
 * grpc-js's channelz (its introspection service, which nothing here serves) counts every call and
 * message in trackers on both sides; off, a unary SDK call costs measurably less CPU.
 */
export const NO_CHANNELZ = { 'grpc.enable_channelz': 0 } as const;

/**
 * Keepalive pings on peer connections: a backstop for dead TCP connections. Dead peers are
 * normally dropped earlier by the heartbeats (MISO_PEER_TIMEOUT_MS); pings stay lenient so that
 * a CPU-starved edge node is not disconnected for answering a ping late.
 */
export const KEEPALIVE_TIME_MS = 10_000;
/** How long to wait for a keepalive ping's answer before the connection is closed. */
export const KEEPALIVE_TIMEOUT_MS = 5_000;
/** The server accepts client pings this often (must not be above KEEPALIVE_TIME_MS). */
export const MIN_PING_INTERVAL_WITHOUT_DATA_MS = 5_000;

export function peerChannelOptions(maxMessageBytes: number): ChannelOptions {
  return {
    ...NO_CHANNELZ,
    'grpc.keepalive_time_ms': KEEPALIVE_TIME_MS,
    'grpc.keepalive_timeout_ms': KEEPALIVE_TIMEOUT_MS,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_time_between_pings_ms': MIN_PING_INTERVAL_WITHOUT_DATA_MS,
    // We reconnect ourselves (with jittered backoff); keep grpc-js's own backoff short.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1_000,
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': maxMessageBytes,
  };
}

/** The local SDK endpoint: no keepalive pings (a unix socket or loopback does not half-die). */
export function sdkServerOptions(maxMessageBytes: number): ChannelOptions {
  return {
    ...NO_CHANNELZ,
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': maxMessageBytes,
  };
}

export function serverOptions(maxMessageBytes: number): ChannelOptions {
  return {
    ...NO_CHANNELZ,
    'grpc.keepalive_time_ms': KEEPALIVE_TIME_MS,
    'grpc.keepalive_timeout_ms': KEEPALIVE_TIMEOUT_MS,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': MIN_PING_INTERVAL_WITHOUT_DATA_MS,
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': maxMessageBytes,
  };
}

/**
 * Turns Nagle's algorithm off on the server's accepted sockets, as grpc-js already does on the
 * client side. Without it, small messages the server side writes (acks, digests, replies) can
 * wait for the peer's delayed TCP ACK (up to 40 ms on Linux). grpc-js has no option for this, so
 * the server's http2 factory is wrapped; if a grpc-js version renames it, this does nothing.
 */
export function setServerNoDelay(server: object): void {
  const s = server as { createHttp2Server?: (...a: unknown[]) => { on(ev: 'connection', f: (sock: { setNoDelay(v: boolean): void }) => void): void } };
  const orig = s.createHttp2Server;
  if (typeof orig !== 'function') return;
  s.createHttp2Server = function (this: unknown, ...a: unknown[]) {
    const h2 = orig.apply(this, a);
    h2.on('connection', (sock) => sock.setNoDelay(true));
    return h2;
  };
}
