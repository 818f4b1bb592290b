/**
 * The gateway's connection bounds. It faces the network with mutual TLS, so a client that opens sockets and
 * never finishes a handshake, or trickles a request, must cost it a bounded amount: the handshake has
 * `handshakeMs`, then the API's bounds apply (server/boot/http-server.ts HTTP_TIMEOUTS: 20 s for the headers,
 * 60 s for the whole request, checked every second), at most `maxConnections` sockets are open at once
 * (a socket past the cap is closed at accept, before any TLS work), and at most `maxHandshakes` of them are
 * in their TLS handshake at once (one more is closed at accept too).
 */
export interface GatewayLimits {
  handshakeMs: number;
  headersMs: number;
  requestMs: number;
  checkIntervalMs: number;
  maxConnections: number;
  /**
   * TLS handshakes under way at once. After a gateway restart a whole fleet reconnects within seconds: past
   * what the gateway completes within the handshake timeout, every handshake it starts times out after
   * costing it its work, the agents retry, and the storm feeds itself. Closing the extra sockets at accept
   * costs nearly nothing; the agents retry with their jittered backoff.
   */
  maxHandshakes: number;
  /**
   * HTTP/2 streams open at once on one connection (the `SETTINGS_MAX_CONCURRENT_STREAMS` the gateway announces;
   * a stream past it is refused with `REFUSED_STREAM`, or the connection with `GOAWAY` once the client
   * acknowledged the setting). An agent needs a handful: its session, a renewal, an acceptance report, a command
   * result; Node's own default is unbounded, which let one certificate hold hundreds of streams on one connection.
   */
  maxConcurrentStreams: number;
}

export const GATEWAY_LIMITS: GatewayLimits = {
  handshakeMs: 10_000,
  headersMs: 20_000,
  requestMs: 60_000,
  checkIntervalMs: 1_000,
  // An agent holds a connection for one call (a join or a renewal); ten thousand in flight is far above a
  // fleet's renewal rate and far below the descriptors Node raises its limit to.
  maxConnections: 10_000,
  // A handshake costs the gateway about 1 to 3 ms of CPU on these machines: 256 at once is well inside the
  // handshake timeout, and leaves room for the API and the console on a shared machine.
  maxHandshakes: 256,
  maxConcurrentStreams: 32,
};

/**
 * TLS 1.2 suites: ECDHE with an AEAD only (no CBC, no SHA-1 MAC, no static RSA or DHE). The TLS 1.3 suites are
 * Node's defaults, named here because a `ciphers` list without them would turn TLS 1.3 off.
 */
export const GATEWAY_CIPHERS = [
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_GCM_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

function wholeNumber(env: Record<string, string | undefined>, name: string, min: number, max: number): number | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new Error(`${name} must be a whole number from ${min} to ${max}, not ${value}`);
  return n;
}

/**
 * The limits the environment sets: BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS (1 to 120, default 10) and
 * BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS (1 to 1,000,000, default 10,000), BETTER_COMPUTE_GATEWAY_MAX_HANDSHAKES
 * (1 to 100,000, default 256) and BETTER_COMPUTE_GATEWAY_MAX_STREAMS (8 to 1,000, default 32: HTTP/2 streams
 * at once per connection); the rest are {@link GATEWAY_LIMITS}.
 *
 * @throws Error naming the variable when a value is out of range.
 */
export function gatewayLimitsFromEnv(env: Record<string, string | undefined> = process.env): GatewayLimits {
  const handshakeSeconds = wholeNumber(env, 'BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS', 1, 120);
  const maxConnections = wholeNumber(env, 'BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS', 1, 1_000_000);
  const maxHandshakes = wholeNumber(env, 'BETTER_COMPUTE_GATEWAY_MAX_HANDSHAKES', 1, 100_000);
  const maxConcurrentStreams = wholeNumber(env, 'BETTER_COMPUTE_GATEWAY_MAX_STREAMS', 8, 1_000);
  return {
    ...GATEWAY_LIMITS,
    ...(handshakeSeconds === undefined ? {} : { handshakeMs: handshakeSeconds * 1000 }),
    ...(maxConnections === undefined ? {} : { maxConnections }),
    ...(maxHandshakes === undefined ? {} : { maxHandshakes }),
    ...(maxConcurrentStreams === undefined ? {} : { maxConcurrentStreams }),
  };
}
