import { describe, expect, it } from 'vitest';
import { measureChecks } from '@/agent/acceptance/measure';
import {
  ACCEPTANCE_CHECKS,
  BUILT_IN_CHECKS,
  formFieldOf,
  initialPoolValues,
  poolFieldMessage,
  toCreatePoolInput,
  type PoolFormValues,
} from './pool-form';

const values = (over: Partial<PoolFormValues> = {}): PoolFormValues => ({ ...initialPoolValues('site_1'), name: ' gpu-a ', ...over });

describe('toCreatePoolInput', () => {
  it('leaves out empty choices so server defaults apply', () => {
    expect(toCreatePoolInput('tnt_1', values())).toEqual({ tenantId: 'tnt_1', siteId: 'site_1', name: 'gpu-a', agent: 'bcd' });
  });
  it('builds the policy with the ticked checks the agent runs, in its order, with their thresholds', () => {
    const input = toCreatePoolInput(
      'tnt_1',
      values({
        joinAttestors: ['tpm', 'join-token'],
        platformOperated: true,
        acceptance: { 'gpu-count': '8', identity: '', 'min-memory': '512' },
      }),
    );
    expect(input.policy).toEqual({
      joinAttestors: ['join-token', 'tpm'],
      kubernetes: { platformOperated: true },
      acceptance: [{ check: 'identity' }, { check: 'min-memory', minGiB: 512 }, { check: 'gpu-count', min: 8 }],
    });
    expect(input.acceptanceChecks).toBeUndefined();
  });
  it('offers exactly the checks the agent measures', async () => {
    expect(Object.keys(ACCEPTANCE_CHECKS).sort()).toEqual([...BUILT_IN_CHECKS].sort());
    const probe = { claims: async () => ({}), cpus: async () => 4, memoryBytes: async () => 1, gpus: async () => 0 };
    const measured = await measureChecks(
      BUILT_IN_CHECKS.map((check) => ({ check })),
      probe,
    );
    expect(measured.filter((m) => m.error !== undefined)).toEqual([]);
    expect((await measureChecks([{ check: 'gpu-burn' }], probe))[0]?.error).toBe('this agent has no check named gpu-burn');
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
    expect(formFieldOf('acceptanceChecks.1')).toBe('acceptance');
    expect(formFieldOf('policy.acceptance.0.min')).toBe('acceptance');
    expect(formFieldOf('policy.joinAttestors')).toBe('joinAttestors');
    expect(formFieldOf('policy.kubernetes.platformOperated')).toBe('platformOperated');
    expect(formFieldOf('policy.tpm.ekAllowList.0')).toBe('tpmEkAllowList');
    expect(formFieldOf('tenantId')).toBeNull();
    expect(formFieldOf(null)).toBeNull();
  });
  it('names the bad check instead of its index', () => {
    const error = {
      message: 'policy.acceptance.1.min: Too small: expected number to be >=1',
      field: 'policy.acceptance.1.min',
      domainCode: 'INVALID_ARGUMENT',
      httpStatus: 400,
    };
    expect(poolFieldMessage(error, values({ acceptance: { identity: '', 'min-cpus': '0' } }))).toBe(
      'min-cpus: Too small: expected number to be >=1',
    );
  });
});
