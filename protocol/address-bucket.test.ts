import { describe, expect, it } from 'vitest';
import { addressBucket, sameAddress } from './address-bucket';

describe('addressBucket (what one source address counts as for new join requests)', () => {
  it('counts an IPv4 address as itself, an IPv4-mapped one too', () => {
    expect(addressBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts every IPv6 address of one /64 as one, however it is written', () => {
    const one = addressBucket('2001:db8:1:2::1');
    expect(one).toBe('2001:db8:1:2::/64');
    for (const other of ['2001:db8:1:2:ffff:ffff:ffff:fffe', '2001:0DB8:0001:0002:0:0:0:9', '2001:db8:1:2:0:0:1.2.3.4']) {
      expect(addressBucket(other), other).toBe(one);
    }
    expect(addressBucket('2001:db8:1:3::1')).not.toBe(one);
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
  });

  it('keeps anything that is not an address as it is', () => {
    expect(addressBucket('unknown')).toBe('unknown');
  });
});

describe('addressBucket, as the endpoint limits count an address', () => {
  it('keeps an IPv4 address and counts an IPv6 address by its /64', () => {
    expect(addressBucket('10.1.2.3')).toBe('10.1.2.3');
    expect(addressBucket('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(addressBucket('2001:0db8:0000:0001:ffff:1:2:3')).toBe('2001:db8:0:1::/64');
    expect(addressBucket('fe80::')).toBe('fe80:0:0:0::/64');
    expect(addressBucket('unknown')).toBe('unknown');
  });
});

describe('sameAddress (a lease names the address its token goes to)', () => {
  it('matches one address however it is written', () => {
    expect(sameAddress('10.0.0.5', '10.0.0.5')).toBe(true);
    expect(sameAddress('10.0.0.5', '::ffff:10.0.0.5')).toBe(true);
    expect(sameAddress('2001:db8::5', '2001:0DB8:0:0:0:0:0:0005')).toBe(true);
    expect(sameAddress('::1', '0:0:0:0:0:0:0:1')).toBe(true);
  });

  it('never matches another address, nor a text that is not one', () => {
    expect(sameAddress('10.0.0.5', '10.0.0.6')).toBe(false);
    expect(sameAddress('2001:db8::5', '2001:db8::6')).toBe(false);
    expect(sameAddress('2001:db8::5', '2001:db8:0:1::5')).toBe(false);
    expect(sameAddress('010.0.0.5', '10.0.0.5')).toBe(false);
    expect(sameAddress('unknown', 'unknown')).toBe(false);
    expect(sameAddress('', '')).toBe(false);
    expect(sameAddress('fe80::1%eth0', 'fe80::1')).toBe(false);
  });
});
