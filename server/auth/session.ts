import { getServerSession, type NextAuthOptions } from 'next-auth';
import type { Db } from '@/server/db/client';
import { sessionClaimOf } from '@/server/auth/session-claim';
import { loadSessionPrincipal, type SessionClaim } from '@/server/operators/operators';

export interface SignedInOperator {
  id: string;
  email: string;
  name: string | null;
  /** Signed in with a printed one-time password: the console shows only "choose a new password". */
  passwordChangeRequired: boolean;
}

/** The console's session of a request, read through next-auth's options on the process's database. */
export function createConsoleSession(authOptions: NextAuthOptions, db: () => Db) {
  return {
    /** The operator and session version the request's session cookie claims, unchecked; the API context checks it. */
    async sessionOperatorId(): Promise<SessionClaim | null> {
      return sessionClaimOf(await getServerSession(authOptions));
    },

    /**
     * The operator of the request's session, or null. The session cookie alone is not enough: an operator
     * removed since sign-in, a session ended by sign-out or a password reset (the session version moved on),
     * or a cookie from another database counts as signed out, which keeps /login and the console from
     * redirecting to each other.
     */
    async signedInOperator(): Promise<SignedInOperator | null> {
      const session = await getServerSession(authOptions);
      const claim = sessionClaimOf(session);
      const principal = claim ? await loadSessionPrincipal(db(), claim) : null;
      if (!claim || !principal) return null;
      const user = session?.user as { email?: string | null; name?: string | null } | undefined;
      return {
        id: claim.operatorId,
        email: user?.email ?? '',
        name: user?.name ?? null,
        passwordChangeRequired: principal.passwordChangeRequired === true,
      };
    },
  };
}
