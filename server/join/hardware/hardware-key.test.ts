import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveHardwareKey } from './hardware-key';

const UUID = '4c4c4544-0031-3510-8052-b4c04f4e5632';
const GPU = 'GPU-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e';

describe('deriveHardwareKey', () => {
  it('is deterministic whatever the order, case and separators', () => {
    const a = deriveHardwareKey({
      productUuid: UUID,
      productSerial: 'SN-7701',
      macs: ['3c:ec:ef:12:34:56', '3c:ec:ef:12:34:57'],
      gpuUuids: [GPU],
    });
    const b = deriveHardwareKey({
      productUuid: UUID.toUpperCase().replaceAll('-', ''),
      productSerial: ' sn-7701 ',
      macs: ['3CEC.EF12.3457', '3C-EC-EF-12-34-56', '3c:ec:ef:12:34:56'],
      gpuUuids: [GPU.toUpperCase()],
    });
    expect(a.key).not.toBeNull();
    expect(a.key!.equals(b.key!)).toBe(true);
    expect(a).toMatchObject({ trusted: true, identifiers: 5, hasUuidOrSerial: true });
  });

  it('hashes the documented canonical encoding', () => {
    const { key } = deriveHardwareKey({ productSerial: 'SN-1', macs: ['3c:ec:ef:12:34:56'] });
    const entry = (kind: number, value: string) => Buffer.concat([Buffer.from([kind, 0, value.length]), Buffer.from(value)]);
    const expected = createHash('sha256')
      .update(Buffer.from('bc-hardware-key\u0000v1\u0000'))
      .update(entry(2, 'sn-1'))
      .update(entry(3, '3c:ec:ef:12:34:56'))
      .digest();
    expect(key!.equals(expected)).toBe(true);
  });

  it('drops placeholders before hashing', () => {
    const real = deriveHardwareKey({ productSerial: 'SN-7701', macs: ['3c:ec:ef:12:34:56'] });
    const noisy = deriveHardwareKey({
      productUuid: '03000200-0400-0500-0006-000700080009',
      productSerial: 'SN-7701',
      boardSerial: 'To Be Filled By O.E.M.',
      chassisSerial: 'Default string',
      macs: ['3c:ec:ef:12:34:56', '02:42:ac:11:00:02', 'ff:ff:ff:ff:ff:ff', 'junk'],
      gpuUuids: ['GPU-00000000-0000-0000-0000-000000000000'],
    });
    expect(noisy.key!.equals(real.key!)).toBe(true);
    expect(noisy).toMatchObject({ trusted: true, identifiers: 2 });
  });

  it('counts equal serials once and needs two identifiers to trust', () => {
    const same = deriveHardwareKey({ productSerial: 'SN-7701', boardSerial: 'sn-7701', chassisSerial: 'SN-7701 ' });
    expect(same).toMatchObject({ trusted: false, identifiers: 1, hasUuidOrSerial: true });
    const two = deriveHardwareKey({ productSerial: 'SN-7701', boardSerial: 'MB-42' });
    expect(two).toMatchObject({ trusted: true, identifiers: 2 });
    const macsOnly = deriveHardwareKey({ macs: ['3c:ec:ef:12:34:56', '3c:ec:ef:12:34:57'] });
    expect(macsOnly).toMatchObject({ trusted: true, identifiers: 2, hasUuidOrSerial: false });
  });

  it('has no key when nothing survives', () => {
    expect(deriveHardwareKey({})).toEqual({ key: null, trusted: false, identifiers: 0, hasUuidOrSerial: false });
    expect(
      deriveHardwareKey({ productUuid: 'ffffffff-ffff-ffff-ffff-ffffffffffff', productSerial: 'None', macs: ['02:00:00:00:00:01'] }).key,
    ).toBeNull();
  });

  it('separates kinds: a serial equal to a UUID text is a different identifier', () => {
    const asUuid = deriveHardwareKey({ productUuid: UUID });
    const asSerial = deriveHardwareKey({ productSerial: UUID });
    expect(asUuid.key!.equals(asSerial.key!)).toBe(false);
  });
});
