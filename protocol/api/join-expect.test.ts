import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors';
import { matchesExpect, normalizeExpect } from './join-expect';

const UUID = '4c4c4544-0031-3510-8052-b4c04f4e5632';
const GPU = 'GPU-7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e';
const claims = {
  productUuid: UUID.toUpperCase(),
  productSerial: 'To Be Filled By O.E.M.',
  boardSerial: 'MB-42',
  chassisSerial: 'sn-7701',
  macs: ['3CEC.EF12.3456', '02:42:ac:11:00:02'],
  gpuUuids: [GPU.toUpperCase()],
};

function invalidField(input: unknown): string | undefined {
  try {
    normalizeExpect(input as never);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('INVALID_ARGUMENT');
    return (error as DomainError).field;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

describe('normalizeExpect', () => {
  it('stores normalized identifiers', () => {
    expect(
      normalizeExpect({ productUuid: UUID.toUpperCase(), serial: ' SN-7701 ', mac: '3C:EC:EF:12:34:56', gpuUuid: GPU.toUpperCase() }),
    ).toEqual({ productUuid: UUID, serial: 'SN-7701', mac: '3c:ec:ef:12:34:56', gpuUuid: GPU });
    expect(normalizeExpect({ serial: 'SN-7701', mac: null })).toEqual({ serial: 'SN-7701' });
    expect(normalizeExpect(undefined)).toBeNull();
    expect(normalizeExpect(null)).toBeNull();
  });

  it('refuses bad forms with the field', () => {
    expect(invalidField({})).toBe('expect');
    expect(invalidField({ productUuid: 'nope' })).toBe('expect.productUuid');
    expect(invalidField({ productUuid: '00000000-0000-0000-0000-000000000000' })).toBe('expect.productUuid');
    expect(invalidField({ serial: '  ' })).toBe('expect.serial');
    expect(invalidField({ serial: 'x'.repeat(129) })).toBe('expect.serial');
    expect(invalidField({ serial: 'Default string' })).toBe('expect.serial');
    expect(invalidField({ serial: 7701 })).toBe('expect.serial');
    expect(invalidField({ mac: '3c-ec-ef-12-34-56' })).toBe('expect.mac');
    expect(invalidField({ mac: '3cecef123456' })).toBe('expect.mac');
    expect(invalidField({ mac: '02:42:ac:11:00:02' })).toBe('expect.mac');
    expect(invalidField({ gpuUuid: '7d5a1c2e-0b3f-4a6d-9e8c-1f2a3b4c5d6e' })).toBe('expect.gpuUuid');
    expect(invalidField({ gpuUuid: 'GPU-123' })).toBe('expect.gpuUuid');
  });
});

describe('matchesExpect', () => {
  it('matches every named identifier after normalization', () => {
    expect(matchesExpect({ productUuid: UUID }, claims)).toBe(true);
    expect(matchesExpect({ serial: 'SN-7701' }, claims)).toBe(true);
    expect(matchesExpect({ serial: 'mb-42' }, claims)).toBe(true);
    expect(matchesExpect({ mac: '3c:ec:ef:12:34:56' }, claims)).toBe(true);
    expect(matchesExpect({ gpuUuid: GPU }, claims)).toBe(true);
    expect(matchesExpect({ productUuid: UUID, serial: 'SN-7701', mac: '3c:ec:ef:12:34:56', gpuUuid: GPU }, claims)).toBe(true);
  });

  it('refuses when any named identifier is missing', () => {
    expect(matchesExpect({ productUuid: UUID, serial: 'SN-9999' }, claims)).toBe(false);
    expect(matchesExpect({ mac: '3c:ec:ef:12:34:57' }, claims)).toBe(false);
    expect(matchesExpect({ gpuUuid: 'GPU-00000000-1111-2222-3333-444444444444' }, claims)).toBe(false);
    expect(matchesExpect({ serial: 'SN-7701' }, {})).toBe(false);
  });

  it('never matches placeholders or locally administered MACs', () => {
    const placeholder = {
      productUuid: '03000200-0400-0500-0006-000700080009',
      productSerial: 'Default string',
      macs: ['02:42:ac:11:00:02'],
    };
    expect(matchesExpect({ productUuid: '03000200-0400-0500-0006-000700080009' }, placeholder)).toBe(false);
    expect(matchesExpect({ serial: 'Default string' }, placeholder)).toBe(false);
    expect(matchesExpect({ serial: 'To Be Filled By O.E.M.' }, claims)).toBe(false);
    expect(matchesExpect({ mac: '02:42:ac:11:00:02' }, placeholder)).toBe(false);
  });

  it('fails closed on an expect that names nothing', () => {
    expect(matchesExpect({}, claims)).toBe(false);
  });
});
