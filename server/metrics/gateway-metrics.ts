import type tls from 'node:tls';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The gateway's own counters: a separate registry, since the gateway is its own process and holds none of
 * the API's state. `path` is one of the relayed paths or `other`, so a scanner's URLs add no series.
 */
export function createGatewayMetrics(relayedPaths: ReadonlySet<string>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let open = 0;
  new Gauge({
    name: 'better_compute_gateway_connections',
    help: 'TLS connections the gateway holds open.',
    registers: [registry],
    collect() {
      this.set(open);
    },
  });
  const requests = new Counter({
    name: 'better_compute_gateway_requests_total',
    help: 'Requests the gateway answered, by relayed path (or other) and HTTP status.',
    labelNames: ['path', 'status'] as const,
    registers: [registry],
  });
  const handshakeFailures = new Counter({
    name: 'better_compute_gateway_tls_handshake_failures_total',
    help: 'TLS handshakes that failed (a client that broke off, spoke no TLS, or offered nothing we accept).',
    registers: [registry],
  });
  return {
    registry,
    /** Counts the connections and failed handshakes of `server`. */
    watch(server: tls.Server) {
      server.on('secureConnection', (socket) => {
        open += 1;
        socket.once('close', () => (open -= 1));
      });
      server.on('tlsClientError', () => handshakeFailures.inc());
    },
    request(path: string, status: number) {
      requests.inc({ path: relayedPaths.has(path) ? path : 'other', status: String(status) });
    },
  };
}
