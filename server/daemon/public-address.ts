import net from 'node:net';

/**
 * Address ranges a server-side fetch must never reach: this machine, private networks, link-local (cloud
 * metadata lives at 169.254.169.254), shared and benchmark space, documentation, multicast, reserved and the
 * IPv6 forms that embed an IPv4 address (mapped, NAT64, 6to4, Teredo), whose IPv4 part could be any of those.
 */
const BLOCKED_V4 = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255
] as const;

const BLOCKED_V6 = [
  ['::', 128], // unspecified
  ['::1', 128],
  ['::', 96], // IPv4-compatible (deprecated)
  ['::ffff:0:0', 96], // IPv4-mapped: refused whatever it maps (isPublicAddress says no before looking)
  ['64:ff9b::', 96], // NAT64
  ['64:ff9b:1::', 48],
  ['100::', 64], // discard
  ['2001::', 32], // Teredo
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['fc00::', 7], // unique local (ULA)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const;

// Two lists: one BlockList matches IPv4 addresses against its IPv6 rules too (as ::ffff:a.b.c.d).
const blockedV4 = new net.BlockList();
for (const [address, prefix] of BLOCKED_V4) blockedV4.addSubnet(address, prefix, 'ipv4');
const blockedV6 = new net.BlockList();
for (const [address, prefix] of BLOCKED_V6) blockedV6.addSubnet(address, prefix, 'ipv6');

const MAPPED_V4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** True for `127.x.y.z`, `::1` and the mapped `::ffff:127.x.y.z`: this machine. */
export function isLoopbackAddress(address: string): boolean {
  const v4 = MAPPED_V4.exec(address)?.[1] ?? address;
  if (net.isIPv4(v4)) return loopback.check(v4, 'ipv4');
  return net.isIPv6(address) && loopback.check(address, 'ipv6');
}

/**
 * True only for a global unicast address: an IPv4 address outside every blocked range, or an IPv6 address
 * in 2000::/3 outside every blocked range. Anything that is not an IP address is false.
 */
export function isPublicAddress(address: string): boolean {
  const mapped = MAPPED_V4.exec(address)?.[1];
  if (mapped) return false;
  if (net.isIPv4(address)) return !blockedV4.check(address, 'ipv4');
  if (!net.isIPv6(address)) return false;
  // Global unicast is 2000::/3: the first hextet from 0x2000 to 0x3fff.
  const first = parseInt(address.startsWith('::') ? '0' : address.split(':', 1)[0]!, 16);
  if (!(first >= 0x2000 && first <= 0x3fff)) return false;
  return !blockedV6.check(address, 'ipv6');
}
