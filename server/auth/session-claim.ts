import type { SessionClaim } from '../operators/operators';

/** The session version a JWT (or the session built from it) carries; null for a cookie from before versions. */
export function sessionVersionOf(token: object | null | undefined): number | null {
  const version = (token as { sv?: unknown } | null | undefined)?.sv;
  return typeof version === 'number' && Number.isInteger(version) ? version : null;
}

/** The claim of a next-auth session object, or null when it names no operator or no session version. */
export function sessionClaimOf(session: { user?: unknown } | null | undefined): SessionClaim | null {
  const user = session?.user as { id?: unknown; sessionVersion?: unknown } | undefined;
  if (typeof user?.id !== 'string') return null;
  const sessionVersion = sessionVersionOf({ sv: user.sessionVersion });
  return sessionVersion === null ? null : { operatorId: user.id, sessionVersion };
}
