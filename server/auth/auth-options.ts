import type { NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { getDb } from '../db/client';
import { logLimited } from '../log';
import { clientAddressFromHeaders } from '../http/client-address';
import { authenticateOperator, endOperatorSessions } from '../operators/operators';
import { sessionVersionOf } from './session-claim';

/** Whether the console's public URL is https: its cookies are then `Secure` (and `__Secure-` named). */
export const isHttpsPublicUrl = (publicUrl = process.env.NEXTAUTH_URL) => publicUrl?.toLowerCase().startsWith('https://') ?? false;

/**
 * next-auth's own log lines. An invalid or expired session cookie (JWT_SESSION_ERROR) is something any
 * client can send without credentials: one short line, rate-limited, never the decryption error's stack.
 */
const authLogger: NextAuthOptions['logger'] = {
  error(code) {
    logLimited(`next-auth:${code}`, code === 'JWT_SESSION_ERROR' ? 'invalid session cookie ignored' : `next-auth error ${code}`);
  },
  warn(code) {
    logLimited(`next-auth-warn:${code}`, `next-auth warning ${code}`);
  },
  debug() {},
};

/**
 * Console sign-in: email and password against the operators table (scrypt hashes). Sessions are signed
 * JWT cookies under NEXTAUTH_SECRET, which the boot process keeps in the data directory, so they survive
 * a restart. The JWT carries the operator's session version; every request checks it against PostgreSQL
 * (lib/session.ts), so sign-out or a password reset ends every session of the operator on every instance.
 * Memberships are read fresh on every request, never from the cookie.
 */
export function createAuthOptions(publicUrl = process.env.NEXTAUTH_URL): NextAuthOptions {
  return {
    secret: process.env.NEXTAUTH_SECRET,
    session: { strategy: 'jwt', maxAge: 12 * 60 * 60 },
    useSecureCookies: isHttpsPublicUrl(publicUrl),
    pages: { signIn: '/login' },
    logger: authLogger,
    providers: [
      CredentialsProvider({
        name: 'Email and password',
        credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
        async authorize(credentials, req) {
          if (!credentials?.email || !credentials.password) return null;
          // The boot server's decision on the client address (the socket, or X-Forwarded-For behind a trusted proxy).
          const address = clientAddressFromHeaders(req?.headers as Record<string, unknown> | undefined);
          const operator = await authenticateOperator(getDb(), credentials.email, credentials.password, address);
          return operator ? { id: operator.id, email: operator.email, name: operator.name, sessionVersion: operator.sessionVersion } : null;
        },
      }),
    ],
    callbacks: {
      jwt({ token, user }) {
        if (user) {
          token.sub = user.id;
          token.sv = (user as { sessionVersion?: number }).sessionVersion;
        }
        return token;
      },
      session({ session, token }) {
        const user = session.user as { id?: string; sessionVersion?: number } | undefined;
        if (user && token.sub) {
          user.id = token.sub;
          user.sessionVersion = sessionVersionOf(token) ?? undefined;
        }
        return session;
      },
    },
    events: {
      // Sign-out ends every session of the operator, not only this browser's cookie (which a copy outlives).
      async signOut({ token }) {
        const version = sessionVersionOf(token);
        if (token?.sub && version !== null) await endOperatorSessions(getDb(), token.sub, version);
      },
    },
  };
}

export const authOptions: NextAuthOptions = createAuthOptions();
