import { randomBytes } from 'node:crypto';
import type { Session, User } from 'next-auth';
import { decode, encode, type JWT } from 'next-auth/jwt';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { captureStderr, createTestTenant } from '../../test/fixtures';
import { createApiContext } from '../api/context';
import { authenticateOperator, createOperator, resetOperatorPassword } from '../operators/operators';
import { createAuthOptions } from './auth-options';
import { sessionClaimOf } from './session-claim';

const SECRET = 'test-nextauth-secret-' + randomBytes(8).toString('hex');
const PASSWORD = 'correct-horse-battery-staple';

const options = createAuthOptions(testDb, 'http://localhost:3000');

/** Signs in as next-auth does: authorize, the jwt callback, and the cookie's encrypted JWT. */
async function signIn(email: string, password = PASSWORD): Promise<string> {
  const operator = await authenticateOperator(testDb(), email, password);
  expect(operator).not.toBeNull();
  const token = await options.callbacks!.jwt!({ token: { email }, user: operator as unknown as User, account: null } as never);
  return encode({ token, secret: SECRET });
}

/** What a request carrying `cookie` is allowed as: the principal the API context builds from it, if any. */
async function principalOf(cookie: string) {
  const token = (await decode({ token: cookie, secret: SECRET })) as JWT;
  const session = (await options.callbacks!.session!({
    session: { user: { email: token.email }, expires: '' } as Session,
    token,
  } as never)) as Session;
  const ctx = await createApiContext(testDb(), new Headers(), async () => sessionClaimOf(session));
  return ctx.principal;
}

async function operator() {
  const t = await createTestTenant(testDb());
  const email = `op-${randomBytes(4).toString('hex')}@example.com`;
  const { id } = await createOperator(testDb(), { email, name: 'Op', password: PASSWORD, tenantId: t.tenantId, role: 'admin' });
  return { id, email };
}

describe('console sessions', () => {
  it('end at sign-out for every cookie of the operator, captured copies included', async () => {
    const { id, email } = await operator();
    const captured = await signIn(email);
    const otherBrowser = await signIn(email);
    expect((await principalOf(captured))?.id).toBe(id);
    await options.events!.signOut!({ token: (await decode({ token: captured, secret: SECRET }))!, session: null as never });
    expect(await principalOf(captured)).toBeNull();
    expect(await principalOf(otherBrowser)).toBeNull();
    // A new sign-in works, and replaying the old cookie to sign-out does not end the new session.
    const fresh = await signIn(email);
    await options.events!.signOut!({ token: (await decode({ token: captured, secret: SECRET }))!, session: null as never });
    expect((await principalOf(fresh))?.id).toBe(id);
  });

  it('end at a password reset', async () => {
    const { id, email } = await operator();
    const cookie = await signIn(email);
    expect((await principalOf(cookie))?.id).toBe(id);
    const password = await resetOperatorPassword(testDb(), email);
    expect(await principalOf(cookie)).toBeNull();
    expect((await principalOf(await signIn(email, password)))?.id).toBe(id);
  });

  it('end when the operator is removed, and a cookie without a session version is no session', async () => {
    const { id, email } = await operator();
    const cookie = await signIn(email);
    const legacy = await encode({ token: { sub: id, email }, secret: SECRET });
    expect(await principalOf(legacy)).toBeNull();
    await testDb().operator.delete({ where: { id } });
    expect(await principalOf(cookie)).toBeNull();
  });

  it('marks cookies Secure when the public URL is https', () => {
    expect(createAuthOptions(testDb, 'https://console.example.com').useSecureCookies).toBe(true);
    expect(createAuthOptions(testDb, 'http://localhost:3000').useSecureCookies).toBe(false);
  });

  it('log an invalid session cookie as one short line, rate-limited, without its stack', () => {
    const capture = captureStderr();
    try {
      const error = new Error('decryption operation failed');
      for (let i = 0; i < 100; i++) options.logger!.error!('JWT_SESSION_ERROR', { error, message: error.message } as never);
      const lines = capture.lines.filter((l) => l.includes('invalid session cookie'));
      expect(lines).toHaveLength(1);
      expect(lines[0]!.length).toBeLessThan(200);
      expect(capture.lines.join('')).not.toMatch(/\n\s+at /);
    } finally {
      capture.stop();
    }
  });
});
