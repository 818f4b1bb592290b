import { isIP } from 'node:net';

/**
 * The octets of an IP literal for an iPAddress GeneralName: 4 for IPv4, 16 for IPv6 (with `::` and a trailing
 * dotted IPv4 part expanded). Zone identifiers (`%eth0`) are refused: they mean nothing in a certificate.
 */
export function ipAddressBytes(address: string): Buffer {
  const family = address.includes('%') ? 0 : isIP(address);
  if (family === 4) return Buffer.from(address.split('.').map(Number));
  if (family !== 6) throw new RangeError('not an IP address');
  let text = address;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tail = text
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const left = groups(head);
  const right = groups(rest);
  const words = rest === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  words.forEach((word, i) => out.writeUInt16BE(word, i * 2));
  if (tail.length === 4) out.set(tail, 12);
  return out;
}
