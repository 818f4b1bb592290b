// The first admin's first sign-in for scripts/e2e.mjs, over HTTP as a browser makes it. Only Node built-ins.
import { randomBytes } from 'node:crypto';
import { redact, secrets } from './e2e-output.mjs';

/**
 * The first admin's first sign-in, as a browser makes it: next-auth's CSRF token, the credentials callback
 * (its session cookie), then `account.changePassword` from the console's origin, the only call a one-time
 * password allows. Resolves with the new password, which the specs sign in with.
 */
export async function chooseAdminPassword(baseUrl, admin) {
  const jar = new Map();
  const remember = (response) => {
    for (const cookie of response.headers.getSetCookie()) {
      const pair = cookie.split(';', 1)[0];
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  };
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const csrf = await fetch(`${baseUrl}/api/auth/csrf`);
  remember(csrf);
  const { csrfToken } = await csrf.json();
  const signIn = await fetch(`${baseUrl}/api/auth/callback/credentials`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() },
    body: new URLSearchParams({ csrfToken, email: admin.email, password: admin.password, json: 'true' }),
  });
  remember(signIn);
  if (![...jar.keys()].some((name) => name.endsWith('next-auth.session-token'))) {
    throw new Error(`The first admin's sign-in with the one-time password failed (HTTP ${signIn.status})`);
  }
  const password = randomBytes(24).toString('base64url');
  secrets.add(password);
  const change = await fetch(`${baseUrl}/api/trpc/account.changePassword`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: cookie(), origin: baseUrl },
    body: JSON.stringify({ currentPassword: admin.password, newPassword: password }),
  });
  if (!change.ok) throw new Error(`Choosing the first admin's password failed (HTTP ${change.status}): ${redact(await change.text())}`);
  return { email: admin.email, password };
}
