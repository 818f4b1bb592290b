import { safeRedirectPath } from './safe-redirect';

/** The request header proxy.ts sets to the page's path and query, so the console layout can send it to /login. */
export const RETURN_PATH_HEADER = 'x-return-path';

/**
 * The sign-in URL that brings the operator back to `returnPath` afterwards, saying "your session expired"
 * when `expired`. The path is checked like /login checks it, so a forged header cannot make an open redirect;
 * the console's home needs no return path.
 */
export function loginUrl(returnPath: string | null | undefined, options: { expired?: boolean } = {}): string {
  const params = new URLSearchParams();
  const path = safeRedirectPath(returnPath, '/');
  if (path !== '/' && !path.startsWith('/login')) params.set('callbackUrl', path);
  if (options.expired) params.set('expired', '1');
  const query = params.toString();
  return query ? `/login?${query}` : '/login';
}

/** next-auth's session cookie names (the `__Secure-` one over HTTPS); their presence means a session once existed. */
export const SESSION_COOKIE_NAMES = ['next-auth.session-token', '__Secure-next-auth.session-token'];

let isSigningOut = false;

/**
 * Sign-out ends the session before the page leaves: a list re-read meanwhile answers 401, which must not
 * send the operator to "your session expired" instead of the plain sign-in page.
 */
export function markSigningOut() {
  isSigningOut = true;
}

export function signingOut(): boolean {
  return isSigningOut;
}
