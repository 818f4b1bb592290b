import { describe, expect, it } from 'vitest';
import { checkStartupConfig } from '../boot/startup-config';
import { newRequestLimitsFromEnv } from './join-request-limits';

describe('the new-join-request rate limits', () => {
  it('default to 20 per source address and 300 per site a minute, and read both variables', () => {
    expect(newRequestLimitsFromEnv({})).toMatchObject({ perAddress: 20, perSite: 300, windowSeconds: 60 });
    expect(
      newRequestLimitsFromEnv({ BETTER_COMPUTE_JOIN_REQUESTS_PER_ADDRESS: '5', BETTER_COMPUTE_JOIN_REQUESTS_PER_SITE: '1000' }),
    ).toMatchObject({ perAddress: 5, perSite: 1000 });
  });

  it('allow 60 challenges without a token per source address a minute by default, and read the variable', () => {
    expect(newRequestLimitsFromEnv({})).toMatchObject({ challengesPerAddress: 60 });
    expect(newRequestLimitsFromEnv({ BETTER_COMPUTE_CHALLENGES_PER_ADDRESS: '7' })).toMatchObject({ challengesPerAddress: 7 });
  });

  it('stop the start on a value out of range, naming the variable', () => {
    for (const value of ['0', '-1', '1.5', 'ten', '1000001']) {
      expect(() => checkStartupConfig({ BETTER_COMPUTE_JOIN_REQUESTS_PER_ADDRESS: value })).toThrow(
        /BETTER_COMPUTE_JOIN_REQUESTS_PER_ADDRESS/,
      );
      expect(() => checkStartupConfig({ BETTER_COMPUTE_JOIN_REQUESTS_PER_SITE: value })).toThrow(/BETTER_COMPUTE_JOIN_REQUESTS_PER_SITE/);
      expect(() => checkStartupConfig({ BETTER_COMPUTE_CHALLENGES_PER_ADDRESS: value })).toThrow(/BETTER_COMPUTE_CHALLENGES_PER_ADDRESS/);
    }
  });
});
