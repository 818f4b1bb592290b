'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import type { Site } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';

/** Turns two-person approval of the site's join requests on or off (`sites.update` `requiredApprovals`). */
export function SiteApprovalsButton({ site, tenantId }: { site: Site; tenantId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const update = useMutation(
    trpc.sites.update.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries(trpc.sites.pathFilter()),
    }),
  );
  const isTwo = site.requiredApprovals === 2;
  const label = isTwo ? 'Allow one approval' : 'Require two approvals';
  return (
    <ConfirmButton
      label={label}
      ariaLabel={`${label} for join requests of site ${site.name}`}
      title={isTwo ? `One approval for site ${site.name}?` : `Two-person approval for site ${site.name}?`}
      confirmLabel={label}
      pendingLabel="Saving…"
      tone="primary"
      mutation={update}
      errorMessage={(error) => toApiError(error).message}
      onConfirm={(close) => update.mutate({ tenantId, siteId: site.id, requiredApprovals: isTwo ? 1 : 2 }, { onSuccess: close })}
    >
      {isTwo ? (
        <p>
          One approval by any operator will admit a machine again. Only while no join request of this site waits: approve those with two
          people, reject them or let them expire first, so nobody lowers the rule to let a waiting machine through alone.
        </p>
      ) : (
        <p>
          Every join request of this site will need approvals by two different people (an API key counts as the person who created it): the
          first is recorded and the request waits, “1 of 2”, until someone else approves it into the same pool. A rejection still decides at
          once. Approval rules and expected-machine imports are not affected.
        </p>
      )}
    </ConfirmButton>
  );
}
