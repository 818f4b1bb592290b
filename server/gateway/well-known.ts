import http from 'node:http';

/** The well-known document under the gateway's base path, the only GET the gateway relays. */
export const wellKnownPath = (basePath: string) => `${basePath}/.well-known/better-compute`;

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

/**
 * Relays `GET {basePath}/.well-known/better-compute` to the API, so that an installed bcd, whose config.toml
 * names only the gateway, can read the join signing certificate and the encryption key it seals to (`bcd join
 * --config /etc/bcd/config.toml --reset --yes`, the documented way back). Nothing in the document is trusted
 * for being relayed: bcd accepts its keys only when they match the pins of its install. No body is read, no
 * vouching is attached (the document is public), and the answer is passed on as the API gave it, at most 64 KiB.
 */
export function relayWellKnown(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  options: { api: URL; agent: http.Agent; path: string },
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const bytes = Buffer.from(JSON.stringify({ code: 'INVALID_ARGUMENT', message: 'Use GET' }));
    res.writeHead(405, { ...JSON_HEADERS, allow: 'GET, HEAD', 'content-length': bytes.length }).end(bytes);
    return;
  }
  const { api, agent } = options;
  const relay = http.request(
    {
      protocol: api.protocol,
      hostname: api.hostname,
      port: api.port,
      method: 'GET',
      path: options.path,
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
      upstream.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const type = upstream.headers['content-type'] ?? 'application/json';
        res.writeHead(upstream.statusCode ?? 502, { ...JSON_HEADERS, 'content-type': type, 'content-length': bytes.length });
        res.end(req.method === 'HEAD' ? undefined : bytes);
      });
      upstream.on('error', () => res.destroy());
    },
  );
  relay.on('timeout', () => relay.destroy(new Error('timeout')));
  relay.on('error', () => {
    if (res.headersSent) return;
    const bytes = Buffer.from(JSON.stringify({ code: 'INVALID_STATE', message: 'The control plane is unavailable; retry' }));
    res.writeHead(503, { ...JSON_HEADERS, 'retry-after': '2', 'content-length': bytes.length }).end(bytes);
  });
  relay.end();
}
