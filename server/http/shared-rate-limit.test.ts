import { describe, expect, it } from 'vitest';
import { addressSubject } from './shared-rate-limit';

describe('addressSubject', () => {
  it('keeps an IPv4 address and counts an IPv6 address by its /64', () => {
    expect(addressSubject('10.1.2.3')).toBe('10.1.2.3');
    expect(addressSubject('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(addressSubject('2001:0db8:0000:0001:ffff:1:2:3')).toBe('2001:db8:0:1::/64');
    expect(addressSubject('::1')).toBe('0:0:0:0::/64');
    expect(addressSubject('fe80::')).toBe('fe80:0:0:0::/64');
    expect(addressSubject('unknown')).toBe('unknown');
  });
});
