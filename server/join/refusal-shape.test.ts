import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { newId } from '../ids';
import { formatJoinToken, newTokenSecret, parseJoinToken } from '../tokens/secret';
import { JoinService } from './join-service';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});

// Everything but `connect` runs on the real pool (its `query` connects through its own callback form).
const bound = (target: object, key: string | symbol) => {
  const value = Reflect.get(target, key);
  return typeof value === 'function' ? value.bind(target) : value;
};

/**
 * A JoinService whose admissions' statements are recorded (their first words), so a test can compare the
 * path two refusals take through the database.
 */
function recordingService() {
  const statements: string[] = [];
  const pool = new Proxy(h.pool, {
    get: (target, key) =>
      key === 'connect'
        ? async () => {
            const client = await target.connect();
            return new Proxy(client, {
              get: (c, k) =>
                k === 'query'
                  ? (text: string, ...rest: unknown[]) => {
                      statements.push(String(text).trim().split(/\s+/).slice(0, 2).join(' '));
                      return (c.query as (...args: unknown[]) => unknown).call(c, text, ...rest);
                    }
                  : Reflect.get(c, k),
            });
          }
        : bound(target, key),
  }) as pg.Pool;
  const service = new JoinService({ pool, loadCrypto: async () => h.crypto, loadRootTenantId: async () => h.rootTenantId });
  return { service, statements };
}

describe('an unknown token id and a known id with a wrong secret', () => {
  it('take the same statements, and a batch that admits nothing rolls back instead of committing', async () => {
    const t = await createTestTenant(testDb());
    const token = (await mintToken(t, { maxUses: 10 })).token!;
    const { service, statements } = recordingService();
    const join = async (bearer: string) => {
      const attempt = await prepareJoinAttempt({ token: bearer, trust: h.trust, claims: machineClaims() });
      statements.length = 0;
      const answer = await service.join(JSON.parse(attempt.body));
      return { status: answer.status, statements: [...statements] };
    };
    // The token is admitted first, so this service knows it as a token in use does.
    expect((await join(token)).status).toBe(200);

    const { id, secret } = parseJoinToken(token)!;
    let wrong = newTokenSecret();
    while (wrong === secret) wrong = newTokenSecret();
    const wrongSecret = await join(formatJoinToken(id, wrong));
    const unknownId = await join(formatJoinToken(newId('jt'), newTokenSecret()));
    expect([wrongSecret.status, unknownId.status]).toEqual([403, 403]);
    expect(wrongSecret.statements).toEqual(unknownId.statements);
    // The locked token row gives the transaction an id; its COMMIT would wait for a WAL flush an unknown id
    // never pays, and the refusal's timing would tell that the id exists.
    expect(wrongSecret.statements.at(-1)).toBe('ROLLBACK');
    expect(wrongSecret.statements).not.toContain('COMMIT');
  });
});
