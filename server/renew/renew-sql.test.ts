import { beforeEach, describe, expect, it, vi } from 'vitest';

// A window other than the shipped 120 s: the SQL and the refusal's wording must follow the constant.
vi.mock('../../protocol/renew-wire', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../protocol/renew-wire')>()),
  RENEW_REPLAY_WINDOW_SECONDS: 7,
}));

describe('the replay window of the renewal SQL', () => {
  // The unit tier shares one module cache between files: load the SQL afresh, under the mock.
  beforeEach(() => vi.resetModules());

  it('is RENEW_REPLAY_WINDOW_SECONDS in every statement that reads or prunes the replay cache', async () => {
    const { PRUNE_PROOFS, WRITE_RENEWALS } = await import('./renew-sql');
    const windows = (sql: string) => [...sql.matchAll(/interval '(\d+) seconds'/g)].map((m) => m[1]);
    expect(windows(WRITE_RENEWALS)).toEqual(['7', '7']);
    expect(windows(PRUNE_PROOFS)).toEqual(['7']);
  });

  it('names the same window in the replay refusal', async () => {
    const { WRITE_REFUSALS } = await import('./renew-write');
    expect(WRITE_REFUSALS.replay[1]).toBe('the same proof was used in the last 7 seconds');
  });
});
