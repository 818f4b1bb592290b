import { describe, expect, it } from 'vitest';
import { MAX_SESSIONS_PER_NODE } from '../../protocol/session-wire';
import { DEFAULT_MAX_SESSIONS_PER_NODE, sessionSettingsFromEnv } from './settings';

describe('the session limit per node', () => {
  it('defaults to 3 and reads BETTER_COMPUTE_SESSION_MAX_PER_NODE from 2 up to the protocol ceiling', () => {
    expect(DEFAULT_MAX_SESSIONS_PER_NODE).toBe(3);
    expect(sessionSettingsFromEnv({}).maxSessionsPerNode).toBe(3);
    expect(sessionSettingsFromEnv({ BETTER_COMPUTE_SESSION_MAX_PER_NODE: '2' }).maxSessionsPerNode).toBe(2);
    expect(sessionSettingsFromEnv({ BETTER_COMPUTE_SESSION_MAX_PER_NODE: String(MAX_SESSIONS_PER_NODE) }).maxSessionsPerNode).toBe(4);
    // One would end the session a renewal moves from; more than the protocol's 4 is refused at start.
    for (const value of ['1', '5', 'x'])
      expect(() => sessionSettingsFromEnv({ BETTER_COMPUTE_SESSION_MAX_PER_NODE: value })).toThrow(/BETTER_COMPUTE_SESSION_MAX_PER_NODE/);
  });
});
