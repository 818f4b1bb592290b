import { describe, expect, it } from 'vitest';
import { ipAddressBytes } from './ip-address';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('ipAddressBytes', () => {
  it.each([
    ['192.0.2.1', 'c0000201'],
    ['::1', '00000000000000000000000000000001'],
    ['2001:db8::', '20010db8000000000000000000000000'],
    ['2001:db8:0:1:2:3:4:5', '20010db8000000010002000300040005'],
    ['::ffff:192.0.2.1', '00000000000000000000ffffc0000201'],
  ])('%s', (address, expected) => expect(hex(ipAddressBytes(address))).toBe(expected));

  it('refuses zones and non-addresses', () => {
    expect(() => ipAddressBytes('fe80::1%eth0')).toThrow();
    expect(() => ipAddressBytes('example.com')).toThrow();
  });
});
