import { describe, expect, it } from 'vitest';
import { initialPoolValues, type PoolFormValues } from './pool-form';
import { validatePoolForm } from './pool-form-validate';

const TENANT = 'tnt_01jz0000000000000000000000';
const SITE = 'site_01jz0000000000000000000000';
const values = (over: Partial<PoolFormValues> = {}): PoolFormValues => ({ ...initialPoolValues(SITE), name: 'gpu-a100', ...over });

describe('validatePoolForm', () => {
  it('finds nothing wrong with a good pool', () => {
    expect(validatePoolForm(TENANT, values({ acceptance: { identity: '', 'gpu-count': '8', 'min-memory': '0.5' } }))).toEqual({});
  });

  it('reports the name and a bad threshold at once, the check named', () => {
    const errors = validatePoolForm(TENANT, values({ name: 'Bad Name!', acceptance: { identity: '', 'min-cpus': '0' } }));
    expect(Object.keys(errors).sort()).toEqual(['acceptance', 'name']);
    expect(errors.acceptance).toMatch(/^min-cpus: /);
    expect(validatePoolForm(TENANT, values({ acceptance: { 'gpu-count': '' } })).acceptance).toMatch(/^gpu-count: /);
    expect(errors.name).not.toMatch(/^name: /);
  });

  it('names a bad EK hash as typed', () => {
    const errors = validatePoolForm(TENANT, values({ tpmEkAllowList: `${'a'.repeat(64)}, sha256/abc` }));
    expect(errors).toEqual({ tpmEkAllowList: '“sha256/abc”: must be the hex SHA-256 of the EK public key (64 hex digits)' });
  });
});
