import type { Metadata } from 'next';
import { PlannedPage } from '@/components/console/planned-page';

export const metadata: Metadata = { title: 'Join tokens' };

export default function JoinTokensPage() {
  return (
    <PlannedPage title="Join tokens" summary="Tokens that let a machine join one pool of a bcd site.">
      <p>
        This page will list each pool’s live join tokens (and, on request, revoked and expired ones) with their role, remaining uses, expiry, any{' '}
        <code>expect</code> hardware binding, whether they allow a reclaim, and whether they are hosted.
      </p>
      <p>You will create a token here (its secret is shown once) and revoke one, which ends it at once.</p>
    </PlannedPage>
  );
}
