import http from 'node:http';

/** The well-known document under the gateway's base path, the only GET the gateway relays. */
export const wellKnownPath = (basePath: string) => `${basePath}/.well-known/better-compute`;

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
/** How long the gateway answers from the API's last document (the API lets caches keep it for 60 s). */
const CACHE_MS = 5_000;
const WINDOW_MS = 60_000;

interface Relayed {
  status: number;
  type: string;
  bytes: Buffer;
}

interface WellKnownRelayOptions {
  api: URL;
  agent: http.Agent;
  path: string;
  /** Documents per client address and minute in this process (BETTER_COMPUTE_WELL_KNOWN_PER_ADDRESS). */
  perAddress: number;
}

function answer(req: http.IncomingMessage, res: http.ServerResponse, relayed: Relayed) {
  res.writeHead(relayed.status, { ...JSON_HEADERS, 'content-type': relayed.type, 'content-length': relayed.bytes.length });
  res.end(req.method === 'HEAD' ? undefined : relayed.bytes);
}

function answerJson(res: http.ServerResponse, status: number, body: object, extra: Record<string, string> = {}) {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...JSON_HEADERS, ...extra, 'content-length': bytes.length }).end(bytes);
}

/**
 * Relays `GET {basePath}/.well-known/better-compute` to the API, so that an installed bcd, whose config.toml
 * names only the gateway, can read the join signing certificate and the encryption key it seals to (`bcd join
 * --config /etc/bcd/config.toml --reset --yes`, the documented way back). Nothing in the document is trusted
 * for being relayed: bcd accepts its keys only when they match the pins of its install. No body is read, no
 * vouching is attached (the document is public), and the answer is passed on as the API gave it, at most 64 KiB.
 *
 * Bounds: the gateway has no database (it holds nothing but its serving key), so its limit per client address
 * is its own, per process: at most `perAddress` documents per address and minute (a fixed window), 429 with
 * retry-after past it. And it answers from the API's last document for {@link CACHE_MS} (one fetch at a time),
 * so a flood at the gateway, from any number of addresses, costs the API at most one call per process every
 * few seconds; the API's shared limit (server/entry/agent-endpoints.ts) then never counts a gateway's
 * relays against its own address.
 */
export class WellKnownRelay {
  private cached: (Relayed & { until: number }) | null = null;
  private fetching: Promise<Relayed> | null = null;
  private windowStart = 0;
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly options: WellKnownRelayOptions,
    private readonly now: () => number = Date.now,
  ) {}

  serve(req: http.IncomingMessage, res: http.ServerResponse, address: string): void {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return answerJson(res, 405, { code: 'INVALID_ARGUMENT', message: 'Use GET' }, { allow: 'GET, HEAD' });
    const t = this.now();
    if (t - this.windowStart >= WINDOW_MS) {
      this.windowStart = t;
      this.counts.clear();
    }
    const count = (this.counts.get(address) ?? 0) + 1;
    this.counts.set(address, count);
    if (count > this.options.perAddress) {
      const retryAfter = Math.max(1, Math.ceil((this.windowStart + WINDOW_MS - t) / 1000));
      return answerJson(
        res,
        429,
        { code: 'INVALID_STATE', message: `Too many requests from this address; retry after ${retryAfter} seconds` },
        { 'retry-after': String(retryAfter) },
      );
    }
    if (this.cached && this.cached.until > t) return answer(req, res, this.cached);
    this.fetching ??= this.fetch().finally(() => (this.fetching = null));
    this.fetching.then(
      (relayed) => {
        if (relayed.status === 200) this.cached = { ...relayed, until: this.now() + CACHE_MS };
        if (!res.destroyed) answer(req, res, relayed);
      },
      (error: Error) => {
        if (res.headersSent) return;
        if (error.message === 'too large') return void res.destroy();
        answerJson(res, 503, { code: 'INVALID_STATE', message: 'The control plane is unavailable; retry' }, { 'retry-after': '2' });
      },
    );
  }

  /** Number of addresses counted in the current window (the window's map is dropped when it ends). */
  get addresses() {
    return this.counts.size;
  }

  private fetch(): Promise<Relayed> {
    const { api, agent } = this.options;
    return new Promise<Relayed>((resolve, reject) => {
      const relay = http.request(
        {
          protocol: api.protocol,
          hostname: api.hostname,
          port: api.port,
          method: 'GET',
          path: this.options.path,
          headers: { accept: 'application/json' },
          agent,
          timeout: 15_000,
        },
        (upstream) => {
          const chunks: Buffer[] = [];
          let size = 0;
          upstream.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > 64 * 1024) return upstream.destroy(new Error('too large'));
            chunks.push(chunk);
          });
          upstream.on('end', () =>
            resolve({
              status: upstream.statusCode ?? 502,
              type: upstream.headers['content-type'] ?? 'application/json',
              bytes: Buffer.concat(chunks),
            }),
          );
          upstream.on('error', reject);
        },
      );
      relay.on('timeout', () => relay.destroy(new Error('timeout')));
      relay.on('error', reject);
      relay.end();
    });
  }
}
