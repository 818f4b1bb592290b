import type { Metadata } from 'next';
import { AcceptInvitationForm } from '@/components/auth/accept-invitation-form';

export const metadata: Metadata = { title: 'Accept an invitation' };

/**
 * Where an invitation link leads (`/invite#bcinv_…`). The token stays in the fragment, which the browser
 * never sends, so no server or proxy log records it; the form reads it and sends it once, to accept.
 */
export default function InvitePage() {
  return (
    <main className="login">
      <div className="login-card">
        <div className="login-brand">
          <span className="brand-mark" aria-hidden="true" />
          <span>Better Compute</span>
        </div>
        <h1>Accept your invitation</h1>
        <AcceptInvitationForm />
      </div>
      <p className="login-footnote">Already an operator elsewhere? Leave the name empty and give your current password.</p>
    </main>
  );
}
