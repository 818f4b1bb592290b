import { describe, expect, it } from 'vitest';
import { oid, sequence, smallInteger, time, tlv, unsignedInteger } from './der';
import { readChildren, readRoot } from './der-reader';
import { ipAddressBytes } from './ip-address';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('der', () => {
  it('writes short and long lengths, and reads them back', () => {
    for (const length of [0, 1, 127, 128, 255, 256, 65_535, 65_536]) {
      const encoded = tlv(0x04, Buffer.alloc(length, 7));
      const node = readRoot(encoded);
      expect(node.end - node.contentStart).toBe(length);
    }
    expect(hex(tlv(0x04, Buffer.alloc(128)).subarray(0, 3))).toBe('048180');
    expect(hex(tlv(0x04, Buffer.alloc(256)).subarray(0, 4))).toBe('04820100');
  });

  it('encodes integers minimally and positive', () => {
    expect(hex(unsignedInteger(Buffer.from([0x00, 0x00, 0x7f])))).toBe('02017f');
    expect(hex(unsignedInteger(Buffer.from([0x80])))).toBe('02020080');
    expect(hex(unsignedInteger(Buffer.from([0x00])))).toBe('020100');
    expect(hex(smallInteger(2))).toBe('020102');
    expect(hex(smallInteger(256))).toBe('02020100');
  });

  it('encodes OIDs', () => {
    expect(hex(oid('1.2.840.10045.4.3.2'))).toBe('06082a8648ce3d040302');
    expect(hex(oid('2.5.29.19'))).toBe('0603551d13');
    expect(hex(oid('1.3.6.1.5.5.7.3.2'))).toBe('06082b06010505070302');
    expect(() => oid('1')).toThrow();
  });

  it('uses UTCTime before 2050 and GeneralizedTime from 2050', () => {
    expect(time(new Date('2026-03-01T12:34:56.789Z')).toString('latin1', 2)).toBe('260301123456Z');
    expect(time(new Date('1950-01-01T00:00:00Z'))[0]).toBe(0x17);
    expect(time(new Date('2050-01-01T00:00:00Z')).toString('latin1', 2)).toBe('20500101000000Z');
    expect(time(new Date('1949-12-31T23:59:59Z'))[0]).toBe(0x18);
  });

  it('reads nested structures and refuses truncation', () => {
    const der = sequence(smallInteger(1), sequence(oid('2.5.4.3')));
    expect(readChildren(der, readRoot(der)).map((n) => n.tag)).toEqual([0x02, 0x30]);
    expect(() => readRoot(der.subarray(0, der.length - 1))).toThrow('malformed DER');
    expect(() => readRoot(Buffer.concat([der, Buffer.from([0])]))).toThrow('malformed DER');
    expect(() => readRoot(Buffer.from('3080', 'hex'))).toThrow('malformed DER');
  });
});

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
