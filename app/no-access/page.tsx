import type { Metadata } from 'next';
import Link from 'next/link';
import { SignInCard } from '@/components/auth/sign-in-card';

export const metadata: Metadata = { title: 'No access' };

const REASONS: Record<string, string> = {
  'no-access':
    'Your identity provider signed you in, but none of your groups gives access to a tenant of this console, and you have no invitation.',
  unverified: 'Your identity provider did not confirm your email address, so the console cannot tell who you are.',
};

/** Where single sign-on sends a person it signed in but the console does not let in. No session was made. */
export default async function NoAccessPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { reason } = await searchParams;
  return (
    <SignInCard title="No access to this console">
      <p className="callout callout-warn" role="alert">
        {REASONS[typeof reason === 'string' ? reason : ''] ?? REASONS['no-access']}
      </p>
      <p>Ask an administrator to add you to a group that maps to a tenant, or to invite you by email. Then sign in again.</p>
      <Link href="/login" className="btn btn-block">
        Back to sign-in
      </Link>
    </SignInCard>
  );
}
