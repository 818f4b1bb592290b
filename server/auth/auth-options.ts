import type { NextAuthOptions } from 'next-auth';
import CredentialsImport from 'next-auth/providers/credentials';
import type { OAuthConfig } from 'next-auth/providers/oauth';
import type { Db } from '../db/client';
import { logLimited } from '../log';
import { clientAddressFromHeaders } from '../http/client-address';
import { authenticateOperator, endOperatorSessions } from '../operators/operators';
import { isRootTenantAdmin } from '../operators/root-admin';
import { signInWithSso } from '../operators/sso';
import { oidcConfigFromEnv, passwordSignInForEveryone, type OidcConfig } from './oidc-config';
import { sessionVersionOf } from './session-claim';

// next-auth ships CommonJS: Next's bundler hands over the function, Node's ESM loader (tsx: the test server)
// the module object with the function as `default`.
const CredentialsProvider = (CredentialsImport as unknown as { default?: typeof CredentialsImport }).default ?? CredentialsImport;

/** The next-auth id of the OpenID Connect provider: its callback is `/api/auth/callback/oidc`. */
const OIDC_PROVIDER_ID = 'oidc';
/** Where a person whose groups give no access lands (app/no-access). */
const NO_ACCESS_PATH = '/no-access';
/** Where a person lands whose verified email is an existing account's that must prove its password to link (app/link-sso). */
const LINK_SSO_PATH = '/link-sso';

type IdTokenClaims = Record<string, unknown> & { sub: string; email?: unknown; email_verified?: unknown; name?: unknown };

/**
 * The OpenID provider, from its discovery document: authorization code flow with PKCE, state and nonce
 * (openid-client checks all three, and the ID token's signature, issuer, audience and expiry). The ID
 * token's claims are the profile; the groups come from `groupsClaim`.
 */
function oidcProvider(config: OidcConfig): OAuthConfig<IdTokenClaims> {
  return {
    id: OIDC_PROVIDER_ID,
    name: config.name,
    type: 'oauth',
    wellKnown: `${config.issuer}/.well-known/openid-configuration`,
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    authorization: { params: { scope: 'openid email profile' } },
    idToken: true,
    checks: ['pkce', 'state', 'nonce'],
    profile: (claims) => ({
      id: claims.sub,
      email: typeof claims.email === 'string' ? claims.email : null,
      name: typeof claims.name === 'string' ? claims.name : null,
    }),
  };
}

const groupsOf = (claims: Record<string, unknown> | undefined, claim: string): string[] => {
  const value = claims?.[claim];
  return Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string') : typeof value === 'string' ? [value] : [];
};

/** Whether the console's public URL is https: its cookies are then `Secure` (and `__Secure-` named). */
const isHttpsPublicUrl = (publicUrl = process.env.NEXTAUTH_URL) => publicUrl?.toLowerCase().startsWith('https://') ?? false;

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
 * (server/auth/session.ts), so sign-out or a password reset ends every session of the operator on every instance.
 * Memberships are read fresh on every request, never from the cookie. `db` answers the process's database
 * (server/boot/next-entry.ts hands in the services' one; a test, its test database).
 */
export function createAuthOptions(
  db: () => Db,
  publicUrl = process.env.NEXTAUTH_URL,
  env: Record<string, string | undefined> = process.env,
): NextAuthOptions {
  const oidc = oidcConfigFromEnv(env);
  const passwordForEveryone = passwordSignInForEveryone(env);
  return {
    secret: process.env.NEXTAUTH_SECRET,
    session: { strategy: 'jwt', maxAge: 12 * 60 * 60 },
    useSecureCookies: isHttpsPublicUrl(publicUrl),
    // next-auth's own error page is not the console's: failures of single sign-on are said on /login.
    pages: { signIn: '/login', error: '/login' },
    logger: authLogger,
    providers: [
      CredentialsProvider({
        name: 'Email and password',
        credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
        async authorize(credentials, req) {
          if (!credentials?.email || !credentials.password) return null;
          // The boot server's decision on the client address (the socket, or X-Forwarded-For behind a trusted proxy).
          const address = clientAddressFromHeaders(req?.headers as Record<string, unknown> | undefined);
          const operator = await authenticateOperator(db(), credentials.email, credentials.password, address);
          if (!operator) return null;
          // Password sign-in switched off: only root admins keep it, as break-glass when the provider is down.
          if (!passwordForEveryone && !(await isRootTenantAdmin(db(), operator.id))) return null;
          return { id: operator.id, email: operator.email, name: operator.name, sessionVersion: operator.sessionVersion };
        },
      }),
      ...(oidc ? [oidcProvider(oidc)] : []),
    ],
    callbacks: {
      /**
       * A sign-in through the OpenID provider becomes an operator here (or none: the no-access page). The
       * operator's id and session version are written onto `user`, which next-auth hands to `jwt` next.
       */
      async signIn({ user, account, profile }) {
        if (account?.provider !== OIDC_PROVIDER_ID) return true;
        if (!oidc || !profile) return false;
        const claims = profile as IdTokenClaims;
        const result = await signInWithSso(
          db(),
          {
            issuer: oidc.issuer,
            subject: claims.sub,
            email: typeof claims.email === 'string' ? claims.email : '',
            emailVerified: claims.email_verified === true,
            name: typeof claims.name === 'string' ? claims.name : null,
            groups: groupsOf(claims, oidc.groupsClaim),
          },
          oidc.roleMap,
        );
        // The link token rides in the fragment, which the browser never sends to a server or a log.
        if (!result.ok)
          return result.reason === 'link-required' ? `${LINK_SSO_PATH}#${result.linkToken}` : `${NO_ACCESS_PATH}?reason=${result.reason}`;
        Object.assign(user, { id: result.operatorId, email: result.email, name: result.name, sessionVersion: result.sessionVersion });
        return true;
      },
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
        if (token?.sub && version !== null) await endOperatorSessions(db(), token.sub, version);
      },
    },
  };
}
