import type net from 'node:net';
import type tls from 'node:tls';
import type { GatewayLimits } from './limits';

/** The count of TLS connections accepted and of sockets closed at accept because of the handshake cap. */
export interface ConnectionStats {
  tlsConnections: number;
  handshakesRefused: number;
}

/**
 * Counts and bounds a TLS server's connections: before the TLS server wraps a socket, one past
 * `maxHandshakes` handshakes under way is closed before any TLS work, and the client retries later (agents
 * with their jittered backoff). Returns the stats and a function that destroys every open TLS socket.
 */
export function trackConnections(server: tls.Server, limits: Pick<GatewayLimits, 'maxHandshakes'>) {
  const stats: ConnectionStats = { tlsConnections: 0, handshakesRefused: 0 };
  const sockets = new Set<tls.TLSSocket>();
  // Sockets accepted whose handshake has not finished, by their peer's address and port (unique among open
  // connections, and the same on the raw socket and on the TLS socket over it).
  const handshaking = new Map<string, net.Socket>();
  const peerKey = (socket: net.Socket) => `${socket.remoteAddress}:${socket.remotePort}`;
  server.prependListener('connection', (raw: net.Socket) => {
    if (handshaking.size >= limits.maxHandshakes) {
      stats.handshakesRefused += 1;
      raw.destroy();
      return;
    }
    const key = peerKey(raw);
    handshaking.set(key, raw);
    raw.once('close', () => {
      if (handshaking.get(key) === raw) handshaking.delete(key);
    });
  });
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    handshaking.delete(peerKey(socket));
    stats.tlsConnections += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return { stats, destroyAll: () => sockets.forEach((socket) => socket.destroy()) };
}
