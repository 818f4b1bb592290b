import type { Metadata } from 'next';
import { redirect } from 'next/navigation';
import { LoginForm } from '@/components/auth/login-form';
import { getSignedInOperator } from '@/lib/session';
import { safeRedirectPath } from '@/lib/safe-redirect';

export const metadata: Metadata = { title: 'Sign in' };

export default async function LoginPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { callbackUrl, expired } = await searchParams;
  const destination = safeRedirectPath(typeof callbackUrl === 'string' ? callbackUrl : null);
  if (await getSignedInOperator()) redirect(destination);
  return (
    <main className="login">
      <div className="login-card">
        <div className="login-brand">
          <span className="brand-mark" aria-hidden="true" />
          <span>Better Compute</span>
        </div>
        <h1>Sign in to the console</h1>
        {expired === '1' && (
          <p className="callout callout-warn login-notice" role="status">
            Your session expired. Sign in again to go on where you were.
          </p>
        )}
        <LoginForm destination={destination} />
      </div>
      <p className="login-footnote">
        First start? The server printed the first admin’s one-time password in its log.
      </p>
    </main>
  );
}
