import { getServerSession } from 'next-auth';
import { authOptions } from '@/server/auth/auth-options';
import { getDb } from '@/server/db/client';
import { loadOperatorPrincipal } from '@/server/operators/operators';

export interface SignedInOperator {
  id: string;
  email: string;
  name: string | null;
}

type SessionUser = { id?: string; email?: string | null; name?: string | null } | undefined;

/** The operator id the request's session cookie names, unchecked; the API context loads (and so checks) it. */
export async function getSessionOperatorId(): Promise<string | null> {
  return ((await getServerSession(authOptions))?.user as SessionUser)?.id ?? null;
}

/**
 * The operator of the request's session, or null. The session cookie alone is not enough: an operator
 * removed since sign-in (or a cookie from another database) counts as signed out, which keeps /login and
 * the console from redirecting to each other.
 */
export async function getSignedInOperator(): Promise<SignedInOperator | null> {
  const session = await getServerSession(authOptions);
  const user = session?.user as SessionUser;
  if (!user?.id) return null;
  if (!(await loadOperatorPrincipal(getDb(), user.id))) return null;
  return { id: user.id, email: user.email ?? '', name: user.name ?? null };
}
