import type { Metadata } from 'next';
import { redirect } from 'next/navigation';
import { LoginForm, SsoButton } from '@/components/auth/login-form';
import { oidcConfigFromEnv, passwordSignInForEveryone } from '@/server/auth/oidc-config';
import { nextEntry } from '@/server/boot/next-entry';
import { safeRedirectPath } from '@/lib/safe-redirect';
import { SignInCard } from '@/components/auth/sign-in-card';

export const metadata: Metadata = { title: 'Sign in' };

export default async function LoginPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { callbackUrl, expired, error } = await searchParams;
  const destination = safeRedirectPath(typeof callbackUrl === 'string' ? callbackUrl : null);
  if (await nextEntry().signedInOperator()) redirect(destination);
  // The boot checked these (checkStartupConfig); null here means single sign-on is not configured.
  const sso = oidcConfigFromEnv();
  const passwordForEveryone = passwordSignInForEveryone() || !sso;
  return (
    <SignInCard title="Sign in to the console" footnote="First start? The server printed the first admin’s one-time password in its log.">
      {expired === '1' && (
        <p className="callout callout-warn login-notice" role="status">
          Your session expired. Sign in again to go on where you were.
        </p>
      )}
      {typeof error === 'string' && error !== 'CredentialsSignin' && (
        <p className="form-error login-notice" role="alert">
          Single sign-on did not complete ({error}). Try again; if it keeps failing, ask an administrator to check the identity provider’s
          settings.
        </p>
      )}
      {sso && <SsoButton label={sso.name} destination={destination} />}
      {sso && passwordForEveryone && <p className="login-divider">or</p>}
      {passwordForEveryone ? (
        <LoginForm destination={destination} />
      ) : (
        // Break-glass: the password form stays for root tenant admins, folded away from everyone else.
        <details className="login-break-glass">
          <summary>Root administrator: sign in with a password</summary>
          <LoginForm destination={destination} />
        </details>
      )}
    </SignInCard>
  );
}
