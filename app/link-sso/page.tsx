import type { Metadata } from 'next';
import Link from 'next/link';
import { LinkSsoForm } from '@/components/auth/link-sso-form';
import { SignInCard } from '@/components/auth/sign-in-card';

export const metadata: Metadata = { title: 'Link single sign-on' };

/**
 * Where single sign-on sends a person whose verified email is an existing account's that has a password (or
 * is a root admin): the email alone never takes the account over; its password links it (`/link-sso#bcsso_…`,
 * the token in the fragment, which no server or proxy log sees). No session was made.
 */
export default function LinkSsoPage() {
  return (
    <SignInCard
      title="Link single sign-on to your account"
      footnote={
        <>
          Not your account? <Link href="/login">Back to sign-in</Link>
        </>
      }
    >
      <p className="login-intro">
        An account with the email your identity provider confirmed already exists here. Give its password once to link single sign-on to it;
        the link request expires after 15 minutes.
      </p>
      <LinkSsoForm />
    </SignInCard>
  );
}
