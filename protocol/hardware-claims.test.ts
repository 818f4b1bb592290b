import { describe, expect, it } from 'vitest';
import {
  hardwareClaimsSchema,
  isPermanentGlobalMac,
  isPlaceholderString,
  isPlaceholderUuid,
  normalizeGpuUuid,
  normalizeMac,
  normalizeUuid,
} from './hardware-claims';

describe('hardwareClaimsSchema', () => {
  it('accepts the wire claims, reads null as absent and drops unknown fields', () => {
    const claims = hardwareClaimsSchema.parse({
      productUuid: '4c4c4544-0031-3510-8052-b4c04f4e5632',
      productSerial: 'SN-7701',
      boardSerial: null,
      macs: ['3c:ec:ef:12:34:56'],
      gpuUuids: null,
      hostname: 'r7-u12',
      extra: 'ignored',
    });
    expect(claims).toEqual({
      productUuid: '4c4c4544-0031-3510-8052-b4c04f4e5632',
      productSerial: 'SN-7701',
      boardSerial: undefined,
      macs: ['3c:ec:ef:12:34:56'],
      gpuUuids: undefined,
      hostname: 'r7-u12',
    });
    expect(hardwareClaimsSchema.parse({})).toEqual({});
  });

  it('bounds lengths, array sizes and characters', () => {
    expect(hardwareClaimsSchema.safeParse({ productSerial: 'x'.repeat(129) }).success).toBe(false);
    expect(hardwareClaimsSchema.safeParse({ hostname: 'h'.repeat(254) }).success).toBe(false);
    expect(hardwareClaimsSchema.safeParse({ macs: Array(65).fill('3c:ec:ef:12:34:56') }).success).toBe(false);
    expect(hardwareClaimsSchema.safeParse({ gpuUuids: Array(65).fill('GPU-x') }).success).toBe(false);
    expect(hardwareClaimsSchema.safeParse({ boardSerial: 'a\nb' }).success).toBe(false);
    expect(hardwareClaimsSchema.safeParse({ macs: [42] }).success).toBe(false);
    expect(hardwareClaimsSchema.safeParse({ macs: 'aa:bb' }).success).toBe(false);
  });

  it('refuses characters that make a claim read other than it is: C1 controls, bidirectional and zero-width format characters, separators', () => {
    for (const hostname of [
      'evil\u202egnp.exe',
      'a\u2066b\u2069',
      'node\u200b01',
      '\ufeffnode',
      'a\u0085b',
      'a\u009bb',
      'a\u2028b',
      'a\u2029b',
    ]) {
      expect(hardwareClaimsSchema.safeParse({ hostname }).success, JSON.stringify(hostname)).toBe(false);
    }
    for (const field of ['productUuid', 'productSerial', 'boardSerial', 'chassisSerial', 'hostname', 'sysVendor', 'productName'] as const) {
      expect(hardwareClaimsSchema.safeParse({ [field]: 'x\u202ey' }).success, field).toBe(false);
    }
    expect(hardwareClaimsSchema.safeParse({ macs: ['3c:ec:ef:12:34:56', '3c:ec\u200b:ef:12:34:57'] }).success).toBe(false);
    expect(hardwareClaimsSchema.safeParse({ gpuUuids: ['GPU-\u2066x'] }).success).toBe(false);
    // What real firmware writes stays accepted: plain text, a no-break space, markup-looking text shown as text.
    expect(
      hardwareClaimsSchema.safeParse({ hostname: '<b>node-01</b>', productName: 'SYS-421GE\u00a0TNRT', sysVendor: 'Supermicro' }).success,
    ).toBe(true);
  });
});

describe('normalizers', () => {
  it('normalizes UUIDs', () => {
    expect(normalizeUuid('4C4C4544-0031-3510-8052-B4C04F4E5632')).toBe('4c4c4544-0031-3510-8052-b4c04f4e5632');
    expect(normalizeUuid(' 4C4C4544003135108052B4C04F4E5632\n')).toBe('4c4c4544-0031-3510-8052-b4c04f4e5632');
    expect(normalizeUuid('4c4c4544 0031 3510 8052 b4c04f4e5632')).toBeNull();
    expect(normalizeUuid('{4c4c4544-0031-3510-8052-b4c04f4e5632}')).toBe('4c4c4544-0031-3510-8052-b4c04f4e5632');
    expect(normalizeUuid('not-a-uuid')).toBeNull();
    expect(normalizeUuid(undefined)).toBeNull();
  });

  it('recognizes placeholder UUIDs', () => {
    for (const uuid of [
      '00000000-0000-0000-0000-000000000000',
      'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
      '11111111111111111111111111111111',
      '03000200-0400-0500-0006-000700080009',
      '12345678-1234-5678-90AB-CDDEEFAABBCC',
      'garbage',
    ]) {
      expect(isPlaceholderUuid(uuid), uuid).toBe(true);
    }
    expect(isPlaceholderUuid('4c4c4544-0031-3510-8052-b4c04f4e5632')).toBe(false);
  });

  it('recognizes placeholder strings', () => {
    for (const value of [
      'To Be Filled By O.E.M.',
      ' default STRING ',
      'System Serial Number',
      'Not Specified',
      'None',
      'N/A',
      '0',
      '123456789',
      'Chassis Serial Number',
      'Base Board Serial Number',
      '',
      '   ',
      'XXXXXXXX',
      '0000 0000',
      '....',
    ]) {
      expect(isPlaceholderString(value), JSON.stringify(value)).toBe(true);
    }
    for (const value of ['SN-7701', 'CN7016351P0123', 'J1X2Y3Z', '10']) {
      expect(isPlaceholderString(value), value).toBe(false);
    }
  });

  it('normalizes MACs in every common form and refuses mixed or short ones', () => {
    for (const form of ['3C:EC:EF:12:34:56', '3c-ec-ef-12-34-56', '3cec.ef12.3456', '3CECEF123456', ' 3c:ec:ef:12:34:56 ']) {
      expect(normalizeMac(form), form).toBe('3c:ec:ef:12:34:56');
    }
    for (const form of ['3c.ec.ef.12.34.56', '3c ec ef 12 34 56', '3c_ec_ef_12_34_56', '3CEC-EF12-3456', '3cecef:123456']) {
      expect(normalizeMac(form), form).toBe('3c:ec:ef:12:34:56');
    }
    for (const bad of [
      '3c:ec:ef:12:34',
      '3c:ec-ef:12:34:56',
      '3c:ec:ef:12:34:5g',
      '3:ec:ef:12:34:56',
      '',
      '3cec.ef12.34567',
      '3c:ec:ef:12:34:56:78',
      'zz:ec:ef:12:34:56',
      '3ce:cef:123:456',
      ':3c:ec:ef:12:34:56',
    ]) {
      expect(normalizeMac(bad), bad).toBeNull();
    }
  });

  it('keeps only permanent, globally administered unicast MACs', () => {
    expect(isPermanentGlobalMac('3c:ec:ef:12:34:56')).toBe(true);
    expect(isPermanentGlobalMac('02:42:ac:11:00:02')).toBe(false); // locally administered (docker)
    expect(isPermanentGlobalMac('01:00:5e:00:00:01')).toBe(false); // multicast
    expect(isPermanentGlobalMac('ff:ff:ff:ff:ff:ff')).toBe(false);
    expect(isPermanentGlobalMac('00:00:00:00:00:00')).toBe(false);
    expect(isPermanentGlobalMac('nonsense')).toBe(false);
  });

  it('normalizes GPU UUIDs', () => {
    expect(normalizeGpuUuid('GPU-7D5A1C2E-0B3F-4A6D-9E8C-1F2A3B4C5D6E')).toBe('GPU-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e');
    expect(normalizeGpuUuid('gpu-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e')).toBe('GPU-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e');
    expect(normalizeGpuUuid('MIG-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e')).toBeNull();
    expect(normalizeGpuUuid('GPU-1234')).toBeNull();
  });
});
