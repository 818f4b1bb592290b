import type { Metadata } from 'next';
import { redirect } from 'next/navigation';
import { ChoosePasswordForm } from '@/components/auth/choose-password-form';
import { nextEntry } from '@/server/boot/next-entry';

export const metadata: Metadata = { title: 'Choose a new password' };

/**
 * Where a session signed in with a printed one-time password lands: every console page redirects here and
 * the API refuses everything but `account.changePassword` until a new password is chosen.
 */
export default async function ChoosePasswordPage() {
  const operator = await nextEntry().signedInOperator();
  if (!operator) redirect('/login');
  if (!operator.passwordChangeRequired) redirect('/');
  return (
    <main className="login">
      <div className="login-card">
        <div className="login-brand">
          <span className="brand-mark" aria-hidden="true" />
          <span>Better Compute</span>
        </div>
        <h1>Choose a new password</h1>
        <p className="login-intro">
          You signed in as <strong>{operator.email}</strong> with a one-time password. Choose your own password to go on; the one-time
          password then stops working.
        </p>
        <ChoosePasswordForm email={operator.email} />
      </div>
    </main>
  );
}
