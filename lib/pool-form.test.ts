import { describe, expect, it } from 'vitest';
import { formFieldOf, poolFieldMessage, toCreatePoolInput, type PoolFormValues } from './pool-form';

const values = (over: Partial<PoolFormValues> = {}): PoolFormValues => ({
  siteId: 'site_1',
  name: ' gpu-a ',
  agent: 'bcd',
  joinAttestors: [],
  platformOperated: false,
  acceptanceChecks: '',
  tpmEkAllowList: '',
  ...over,
});

describe('toCreatePoolInput', () => {
  it('leaves out empty choices so server defaults apply', () => {
    expect(toCreatePoolInput('tnt_1', values())).toEqual({ tenantId: 'tnt_1', siteId: 'site_1', name: 'gpu-a', agent: 'bcd' });
  });
  it('builds the policy and the check list', () => {
    const input = toCreatePoolInput(
      'tnt_1',
      values({ joinAttestors: ['tpm', 'join-token'], platformOperated: true, acceptanceChecks: 'gpu-burn, ,nccl ' }),
    );
    expect(input.policy).toEqual({ joinAttestors: ['join-token', 'tpm'], kubernetes: { platformOperated: true } });
    expect(input.acceptanceChecks).toEqual(['gpu-burn', 'nccl']);
  });
  it('sends the TPM EK allow-list typed with commas, spaces or lines', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    expect(toCreatePoolInput('tnt_1', values({ tpmEkAllowList: ` ${a},\n${b}  ` })).policy).toEqual({ tpm: { ekAllowList: [a, b] } });
  });
});

describe('server errors on the form', () => {
  it('maps server fields onto form fields', () => {
    expect(formFieldOf('name')).toBe('name');
    expect(formFieldOf('acceptanceChecks.1')).toBe('acceptanceChecks');
    expect(formFieldOf('policy.joinAttestors')).toBe('joinAttestors');
    expect(formFieldOf('policy.kubernetes.platformOperated')).toBe('platformOperated');
    expect(formFieldOf('policy.tpm.ekAllowList.0')).toBe('tpmEkAllowList');
    expect(formFieldOf('tenantId')).toBeNull();
    expect(formFieldOf(null)).toBeNull();
  });
  it('names the bad check instead of its index', () => {
    const error = {
      message: 'acceptanceChecks.1: use a check name like gpu-burn',
      field: 'acceptanceChecks.1',
      domainCode: 'INVALID_ARGUMENT',
      httpStatus: 400,
    };
    expect(poolFieldMessage(error, values({ acceptanceChecks: 'ok, Bad_One' }))).toBe('“Bad_One”: use a check name like gpu-burn');
  });
});
