import { BlockList, isIP } from 'node:net';
import { DomainError } from '../../protocol/errors';

/**
 * The header the boot server sets on every request it hands to Next: the client address it decided on.
 * Whatever a client sends under this name is overwritten, so a handler may believe it (sign-in throttling
 * reads it; next-auth's `authorize` sees only headers, never the socket).
 */
export const CLIENT_ADDRESS_HEADER = 'x-better-compute-client-address';

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is the IPv4 address: one client, one key. */
function normalize(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return (mapped ? mapped[1]! : address).toLowerCase();
}

/**
 * BETTER_COMPUTE_TRUSTED_PROXIES: comma-separated addresses or CIDR ranges of the reverse proxies in front
 * of the server. Unset (the default) means no proxy is trusted and X-Forwarded-For is ignored.
 *
 * @throws DomainError INVALID_CONFIG for an entry that is not an address or a CIDR range.
 */
export function parseTrustedProxies(value: string | undefined): BlockList | null {
  if (!value?.trim()) return null;
  const list = new BlockList();
  for (const raw of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [address, bits, extra] = raw.split('/');
    const family = isIP(address ?? '');
    const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
    if (!family || extra !== undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32)) {
      throw new DomainError('INVALID_CONFIG', `BETTER_COMPUTE_TRUSTED_PROXIES: "${raw}" is not an IP address or CIDR range`);
    }
    list.addSubnet(normalize(address!), prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return list;
}

const isTrusted = (trusted: BlockList, address: string) => {
  const family = isIP(address);
  return family !== 0 && trusted.check(address, family === 6 ? 'ipv6' : 'ipv4');
};

/**
 * The address a request comes from: the socket's peer, unless that peer is a trusted proxy; then the
 * X-Forwarded-For hops are read from the right (the ones our proxies appended) and the first hop that is
 * not a trusted proxy is the client. A client can put anything at the left of the header, so nothing
 * left of that hop is believed; a hop that is not an address stops the walk at the last proxy.
 */
export function clientAddressOf(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: BlockList | null,
): string {
  let client = normalize(socketAddress ?? 'unknown');
  if (!trusted || !isTrusted(trusted, client)) return client;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? ''))
    .split(',')
    .map((h) => normalize(h.trim()))
    .filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (!isIP(hop)) break;
    client = hop;
    if (!isTrusted(trusted, hop)) break;
  }
  return client;
}

let configured: { value: string | undefined; list: BlockList | null } | undefined;

/** The process's trusted proxies (BETTER_COMPUTE_TRUSTED_PROXIES), parsed once per value. */
export function trustedProxies(env: Record<string, string | undefined> = process.env): BlockList | null {
  const value = env.BETTER_COMPUTE_TRUSTED_PROXIES;
  if (!configured || configured.value !== value) configured = { value, list: parseTrustedProxies(value) };
  return configured.list;
}

/** The client address the boot server set on a request's headers (plain object or Headers), or `unknown`. */
export function clientAddressFromHeaders(headers: Record<string, unknown> | Headers | undefined): string {
  const value = headers instanceof Headers ? headers.get(CLIENT_ADDRESS_HEADER) : headers?.[CLIENT_ADDRESS_HEADER];
  return typeof value === 'string' && value ? value : 'unknown';
}
