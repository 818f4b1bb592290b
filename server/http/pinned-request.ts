import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net, { type LookupFunction } from 'node:net';

/**
 * Server-side requests to URLs someone else chose (release manifests, webhook deliveries), made so that the
 * address checked is the address connected to: the name is resolved once, every answer is checked, and the
 * connection is handed those addresses rather than resolving again (a second answer could point elsewhere).
 */

export type Address = { address: string; family: number };

/** The host of a URL as the resolver and `net` take it (an IPv6 literal without its brackets). */
export const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** Why a host was refused (it resolves to nothing, or to an address `allowed` refuses); the message names it. */
export class AddressRefused extends Error {}

/** Resolves `host` once (an IP literal is taken as is); every address must pass `allowed`. */
export async function resolveCheckedAddresses(host: string, allowed: (address: string) => boolean): Promise<Address[]> {
  const addresses = net.isIP(host) ? [{ address: host, family: net.isIP(host) }] : await dns.lookup(host, { all: true, verbatim: true });
  const bad = addresses.find(({ address }) => !allowed(address));
  if (addresses.length === 0 || bad) throw new AddressRefused(`${host} resolves to ${bad?.address ?? 'nothing'}`);
  return addresses;
}

interface PinnedRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | Buffer;
  /** The most of the answer's body that is read; the rest is dropped and the connection closed. */
  maxBodyBytes: number;
  signal: AbortSignal;
}

interface PinnedAnswer {
  status: number;
  body: Buffer;
  /** True when the body was longer than `maxBodyBytes` and cut there. */
  truncated: boolean;
}

/**
 * Sends one request to `url` on the addresses checked before (all of them to Node's happy eyeballs, which
 * asks with `all`), while TLS still verifies the certificate for the name. No redirect is followed (a 3xx is
 * an answer like any other) and the body cap holds while streaming, whatever Content-Length says.
 */
export function requestPinned(url: URL, targets: Address[], options: PinnedRequest): Promise<PinnedAnswer> {
  const lookup: LookupFunction = (_host, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, targets);
    else callback(null, targets[0]!.address, targets[0]!.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      {
        protocol: url.protocol,
        hostname: bareHost(url),
        port: url.port || undefined,
        path: url.pathname + url.search,
        method: options.method,
        headers: { ...options.headers, host: url.host },
        lookup,
        agent: false,
        signal: options.signal,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBodyBytes) {
            chunks.push(chunk.subarray(0, Math.max(0, options.maxBodyBytes - (size - chunk.length))));
            response.destroy();
            resolve({ status, body: Buffer.concat(chunks), truncated: true });
          } else chunks.push(chunk);
        });
        response.on('end', () => resolve({ status, body: Buffer.concat(chunks), truncated: false }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}
