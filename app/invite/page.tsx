import type { Metadata } from 'next';
import { AcceptInvitationForm } from '@/components/auth/accept-invitation-form';
import { SignInCard } from '@/components/auth/sign-in-card';

export const metadata: Metadata = { title: 'Accept an invitation' };

/**
 * Where an invitation link leads (`/invite#bcinv_…`). The token stays in the fragment, which the browser
 * never sends, so no server or proxy log records it; the form reads it and sends it once, to accept.
 */
export default function InvitePage() {
  return (
    <SignInCard
      title="Accept your invitation"
      footnote="Already an operator elsewhere? Leave the name empty and give your current password."
    >
      <AcceptInvitationForm />
    </SignInCard>
  );
}
