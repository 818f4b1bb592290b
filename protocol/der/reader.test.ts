import { describe, expect, it } from 'vitest';
import {
  DerError,
  checkDerTree,
  childAt,
  contentOf,
  encodingOf,
  expectElement,
  readChildren,
  readElement,
  readRoot,
  type DerElement,
} from './reader';
import { TAG } from './tags';
import { oid, sequence, smallInteger } from './writer';

const bytes = (hex: string) => Buffer.from(hex, 'hex');

describe('der reader', () => {
  it('reads nested structures and refuses truncation', () => {
    const der = sequence(smallInteger(1), sequence(oid('2.5.4.3')));
    expect(readChildren(der, readRoot(der)).map((n) => n.tag)).toEqual([0x02, 0x30]);
    expect(() => readRoot(der.subarray(0, der.length - 1))).toThrow(DerError);
    expect(() => readRoot(der.subarray(0, der.length - 1))).toThrow('element overruns its container');
    expect(() => readRoot(Buffer.concat([der, Buffer.from([0])]))).toThrow('trailing bytes');
    expect(() => readRoot(bytes('3080'))).toThrow('indefinite length');
    expect(() => readRoot(bytes('30'))).toThrow('truncated element');
  });

  it('refuses a limit that runs past the end of the buffer', () => {
    expect(() => readElement(bytes('30'), 0, 5)).toThrow(new DerError('truncated element'));
    expect(() => readElement(bytes('3082'), 0, 10)).toThrow(new DerError('truncated element'));
  });

  it('names a missing child', () => {
    const der = sequence(smallInteger(5));
    const children = readChildren(der, readRoot(der));
    expect(childAt(children, 0, 'version').tag).toBe(TAG.integer);
    expect(() => childAt(children, 1, 'serialNumber')).toThrow(new DerError('serialNumber is missing'));
  });

  it('locates the content and the whole encoding without copying', () => {
    const der = sequence(smallInteger(5), oid('2.5.4.3'));
    const [integer, type] = readChildren(der, readRoot(der)) as [DerElement, DerElement];
    expect(contentOf(der, integer).toString('hex')).toBe('05');
    expect(encodingOf(der, type).toString('hex')).toBe('0603550403');
    expect(contentOf(der, type).buffer).toBe(der.buffer);
  });

  it('refuses non-minimal, oversized and missing lengths', () => {
    // 0x81 0x05: a one-byte length written in the long form.
    expect(() => readRoot(bytes('0481050102030405'))).toThrow('non-minimal length');
    // 0x82 0x00 0x80: a leading zero length octet.
    expect(() => readRoot(Buffer.concat([bytes('04820080'), Buffer.alloc(0x80)]))).toThrow('non-minimal length');
    expect(() => readRoot(bytes('0484010000000000'))).toThrow('length too large');
    expect(() => readRoot(bytes('0482'))).toThrow('truncated length');
    const long = Buffer.concat([bytes('048180'), Buffer.alloc(0x80)]);
    expect(readRoot(long).contentStart).toBe(3);
  });

  it('refuses high tag numbers and elements that overrun their parent', () => {
    expect(() => readRoot(bytes('1f0100'))).toThrow('high tag numbers');
    // The child claims 3 content bytes, but its parent holds only 2 after its header.
    const overrun = bytes('300404030102');
    expect(() => readChildren(overrun, readRoot(overrun))).toThrow('element overruns its container');
    expect(() => readElement(bytes('0400ff'), 0, 1)).toThrow('truncated element');
  });

  it('checks the tag where the caller expects one', () => {
    const der = sequence(smallInteger(1));
    expect(expectElement(der, 0, der.length, TAG.sequence, 'outer').end).toBe(der.length);
    expect(() => expectElement(der, 0, der.length, TAG.set, 'outer')).toThrow('outer: unexpected tag 0x30');
  });
});

describe('checkDerTree', () => {
  it('walks every constructed element: BER indefinite length deep inside is refused, DER passes', () => {
    const good = sequence(sequence(sequence(oid('2.5.4.3'))), smallInteger(3));
    expect(() => checkDerTree(good, readRoot(good))).not.toThrow();
    const inner = Buffer.concat([bytes('3180'), sequence(oid('2.5.4.3')), bytes('0000')]);
    const ber = sequence(sequence(inner));
    // The outer layers are DER; only a walk of the whole tree finds the indefinite SET.
    expect(() => readChildren(ber, readRoot(ber))).not.toThrow();
    expect(() => checkDerTree(ber, readRoot(ber))).toThrow('indefinite length');
  });

  it('stops at the depth limit and leaves primitive contents alone', () => {
    let deep = sequence();
    for (let i = 0; i < 5; i++) deep = sequence(deep);
    expect(() => checkDerTree(deep, readRoot(deep), 6)).not.toThrow();
    expect(() => checkDerTree(deep, readRoot(deep), 5)).toThrow('nested too deeply');
    // An OCTET STRING holding BER bytes is a value, not structure.
    const octets = sequence(Buffer.concat([bytes('0404'), bytes('3080'), bytes('0000')]));
    expect(() => checkDerTree(octets, readRoot(octets))).not.toThrow();
  });
});
