import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { HELLO_LAG_MS, MAX_HELLO_DECISIONS, MAX_HELLO_DECISIONS_LAGGING, SessionService } from './session-service';
import { sessionSettingsFromEnv } from './settings';

// How many Hellos an API process decides at once: MAX_HELLO_DECISIONS, and fewer while its event loop lags,
// so a reconnect storm leaves room on that loop for the console's calls. Each decision starts by loading the
// runtime; here that load is held open, so the number of loads under way is the number of decisions.

function service(lag: { ms: number }) {
  let active = 0;
  let most = 0;
  const release: Array<() => void> = [];
  const svc = new SessionService({
    pool: {} as pg.Pool,
    loadRuntime: async () => {
      active++;
      most = Math.max(most, active);
      await new Promise<void>((resolve) => release.push(resolve));
      active--;
      // No keys: every Hello is answered 503 without touching a database.
      return null;
    },
    loadRootTenantId: async () => null,
    settings: sessionSettingsFromEnv({}),
    lagMs: () => lag.ms,
  });
  const hello = () => svc.hello({ body: Buffer.from('{}'), vouch: undefined, peer: undefined, path: '/api/compute/v1/session' });
  return { hello, release, active: () => active, most: () => most };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const settle = async (release: Array<() => void>) => {
  while (release.length) {
    release.shift()!();
    await turn();
  }
};

describe('Hello admission in the API', () => {
  it(`decides ${MAX_HELLO_DECISIONS} at once while the event loop keeps up, ${MAX_HELLO_DECISIONS_LAGGING} while it lags`, async () => {
    const lag = { ms: 0 };
    const quiet = service(lag);
    const answers = Array.from({ length: 100 }, () => quiet.hello());
    await turn();
    expect(quiet.active()).toBe(MAX_HELLO_DECISIONS);
    await settle(quiet.release);
    expect((await Promise.all(answers)).every((a) => a.status === 503)).toBe(true);
    expect(quiet.most()).toBe(MAX_HELLO_DECISIONS);

    const busy = service({ ms: HELLO_LAG_MS + 1 });
    const held = Array.from({ length: 100 }, () => busy.hello());
    await turn();
    expect(busy.active()).toBe(MAX_HELLO_DECISIONS_LAGGING);
    await settle(busy.release);
    expect((await Promise.all(held)).every((a) => a.status === 503)).toBe(true);
    expect(busy.most()).toBe(MAX_HELLO_DECISIONS_LAGGING);
  });

  it('starts the waiting Hellos once the lag has passed, with no decision finishing to notice it', async () => {
    const lag = { ms: HELLO_LAG_MS + 100 };
    const s = service(lag);
    const answers = Array.from({ length: 50 }, () => s.hello());
    await turn();
    expect(s.active()).toBe(MAX_HELLO_DECISIONS_LAGGING);
    lag.ms = 0;
    await expect.poll(() => s.active(), { timeout: 2_000 }).toBe(MAX_HELLO_DECISIONS);
    await settle(s.release);
    await Promise.all(answers);
  });
});
