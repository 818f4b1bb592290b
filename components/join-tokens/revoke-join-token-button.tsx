'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmDialog } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import type { Tenant } from '@/lib/api-types';
import { joinTokenErrorMessage, type JoinToken } from '@/lib/join-token-form';
import { useTRPC } from '@/lib/trpc';

export function RevokeJoinTokenButton({ token, poolId, tenant }: { token: JoinToken; poolId: string; tenant: Tenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [isConfirming, setConfirming] = useState(false);
  const revoke = useMutation(
    trpc.joinTokens.revoke.mutationOptions({
      // Revoking twice is not an error (the server returns the revoked record), so no state to reconcile.
      onSuccess: async () => {
        await queryClient.invalidateQueries(trpc.joinTokens.list.pathFilter());
        setConfirming(false);
      },
    }),
  );
  return (
    <>
      <button type="button" className="btn btn-small btn-quiet" aria-label={`Revoke join token ${token.id}`} onClick={() => setConfirming(true)}>
        Revoke
      </button>
      <ConfirmDialog
        open={isConfirming}
        title="Revoke join token?"
        confirmLabel="Revoke token"
        pendingLabel="Revoking…"
        isPending={revoke.isPending}
        error={revoke.error ? joinTokenErrorMessage(toApiError(revoke.error), 'revoke', tenant.name) : null}
        onConfirm={() => revoke.mutate({ tenantId: tenant.id, poolId, tokenId: token.id })}
        onClose={() => {
          revoke.reset();
          setConfirming(false);
        }}
      >
        <p>
          Token <code className="id">{token.id}</code> stops working at once: no further machine can join with it. Machines that already joined with it are not
          affected. This cannot be undone.
        </p>
      </ConfirmDialog>
    </>
  );
}
