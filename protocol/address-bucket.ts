import { isIPv4, isIPv6 } from 'node:net';

/**
 * What one source address counts as: an IPv4 address itself (an IPv4-mapped IPv6 one too), and an IPv6 address
 * by its /64, which one host is commonly given whole (a caller could otherwise take a new address per request).
 * Anything else (not an address) counts as itself.
 */
export function addressBucket(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIPv6(address)) return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
  return address;
}

/**
 * Whether two texts name one address: IPv6 however it is written (case, leading zeros, `::`), and an IPv4-mapped
 * IPv6 address as its IPv4 one. Texts that are not addresses never match anything.
 */
export function sameAddress(a: string, b: string): boolean {
  const canonical = (text: string) => {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(text);
    const address = mapped ? mapped[1]! : text;
    if (isIPv4(address)) return address;
    if (isIPv6(address) && !address.includes('.') && !address.includes('%')) return expandIPv6(address).join(':');
    return null;
  };
  const left = canonical(a);
  return left !== null && left === canonical(b);
}

/** The eight hextets of an IPv6 address (as isIPv6 accepts it), lower case, without leading zeros. */
function expandIPv6(address: string): string[] {
  // A trailing dotted quad (::ffff:1.2.3.4) stands for the last two hextets: only the first four are read.
  const words = (text: string) => (text ? text.split(':').flatMap((w) => (w.includes('.') ? ['0', '0'] : [w])) : []);
  const [head = '', tail] = address.toLowerCase().split('::') as [string, string | undefined];
  const left = words(head);
  const right = tail === undefined ? [] : words(tail);
  const zeros = Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((w) => Number.parseInt(w, 16).toString(16));
}
