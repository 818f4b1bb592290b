import http from 'node:http';
import { vouchHeaders, type GatewayVoucher } from '../vouching/vouch';
import { newRequestId, REQUEST_ID_HEADER } from '../metrics/request-log';

/** How the gateway's calls to the API are bounded. */
export interface RelayBounds {
  /** Sockets to the API at once (the keep-alive agent's pool). */
  maxSockets: number;
  /**
   * Calls that may wait for one of those sockets. Past it a call is not queued: the agent gets a 503 with
   * retry-after at once (as the session hub answers past its waiting bound), rather than a place in a queue
   * whose wait would outlast its own timeouts while the queue holds its body in memory.
   */
  maxWaiting: number;
}

export const RELAY_BOUNDS: RelayBounds = { maxSockets: 256, maxWaiting: 1024 };

/**
 * The gateway's calls to the API: one keep-alive agent of `maxSockets` sockets, each call signed with the
 * vouching for its peer, 60 s each, and at most `maxSockets + maxWaiting` calls in flight or waiting.
 */
export class ApiRelay {
  readonly agent: http.Agent;
  private inFlight = 0;

  constructor(
    private readonly api: URL,
    private voucher: GatewayVoucher,
    private readonly bounds: RelayBounds = RELAY_BOUNDS,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: bounds.maxSockets });
  }

  /** The vouching credential every later call is signed with (the gateway's serving key after a rotation). */
  setVoucher(voucher: GatewayVoucher) {
    this.voucher = voucher;
  }

  /** The vouching credential calls are signed with now. */
  get currentVoucher(): GatewayVoucher {
    return this.voucher;
  }

  /** Calls under way or waiting for a socket. */
  get pending() {
    return this.inFlight;
  }

  /** True when one more call would wait past `maxWaiting`: answer it 503 instead of relaying it. */
  get full() {
    return this.inFlight >= this.bounds.maxSockets + this.bounds.maxWaiting;
  }

  /** One call to the API with the vouching for `peer`; rejects when the API cannot be reached. */
  call = (pathname: string, body: Buffer, peer: Buffer | null, requestId = newRequestId(), callerAddress?: string) => {
    this.inFlight += 1;
    const { api } = this;
    return new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      // The caller's address goes inside the signed vouching: the API records it for joins, and believes it
      // only from a gateway of the pinned serving CA.
      const headers = {
        ...vouchHeaders(this.voucher, peer, body, pathname, Date.now(), callerAddress),
        'content-type': 'application/json',
        'content-length': String(body.length),
        [REQUEST_ID_HEADER]: requestId,
      };
      const relay = http.request(
        {
          protocol: api.protocol,
          hostname: api.hostname,
          port: api.port,
          method: 'POST',
          path: pathname,
          headers,
          agent: this.agent,
          timeout: 60_000,
        },
        (upstream) => {
          const chunks: Buffer[] = [];
          upstream.on('data', (chunk: Buffer) => chunks.push(chunk));
          upstream.on('end', () => resolve({ status: upstream.statusCode ?? 502, body: Buffer.concat(chunks) }));
          upstream.on('error', reject);
        },
      );
      relay.on('timeout', () => relay.destroy(new Error('timeout')));
      relay.on('error', reject);
      relay.end(body);
    }).finally(() => (this.inFlight -= 1));
  };
}
