import type { Metadata } from 'next';
import { redirect } from 'next/navigation';
import { ChoosePasswordForm } from '@/components/auth/choose-password-form';
import { nextEntry } from '@/server/boot/next-entry';
import { SignInCard } from '@/components/auth/sign-in-card';

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
    <SignInCard title="Choose a new password">
      <p className="login-intro">
        You signed in as <strong>{operator.email}</strong> with a one-time password. Choose your own password to go on; the one-time
        password then stops working.
      </p>
      <ChoosePasswordForm email={operator.email} />
    </SignInCard>
  );
}
