import type { Metadata } from 'next';
import { PlannedPage } from '@/components/console/planned-page';

export const metadata: Metadata = { title: 'Join requests' };

export default function JoinRequestsPage() {
  return (
    <PlannedPage title="Join requests" summary="Machines waiting for an operator to decide whether they may join.">
      <p>
        The <code>discovery</code> and <code>tpm</code> attestors defer some joins: a PXE-booted machine nobody expected, or a TPM whose endorsement
        key is on no allow-list. Each deferral is recorded as a join request; nothing is issued and no token is spent.
      </p>
      <p>This page will list pending requests with the claims the machine reported, and let you approve one into a pool or deny it.</p>
    </PlannedPage>
  );
}
