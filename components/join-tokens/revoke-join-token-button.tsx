'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import type { Tenant } from '@/lib/api-types';
import { joinTokenErrorMessage, type JoinToken } from '@/lib/join-token-form';
import { useTRPC } from '@/lib/trpc';

interface RevokeJoinTokenButtonProps {
  token: JoinToken;
  poolId: string;
  tenant: Tenant;
  /** Called once the server confirmed, so the page can say so (the row itself may leave the list). */
  onRevoked?: (tokenId: string) => void;
}

export function RevokeJoinTokenButton({ token, poolId, tenant, onRevoked }: RevokeJoinTokenButtonProps) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.joinTokens.revoke.mutationOptions({
      // Revoking twice is not an error (the server returns the revoked record), so no state to reconcile.
      onSuccess: () => queryClient.invalidateQueries(trpc.joinTokens.list.pathFilter()),
    }),
  );
  return (
    <ConfirmButton
      label="Revoke"
      ariaLabel={`Revoke join token ${token.id}`}
      title="Revoke join token?"
      confirmLabel="Revoke token"
      pendingLabel="Revoking…"
      mutation={revoke}
      errorMessage={(error) => joinTokenErrorMessage(toApiError(error), 'revoke', tenant.name)}
      onConfirm={(close) =>
        revoke.mutate(
          { tenantId: tenant.id, poolId, tokenId: token.id },
          {
            onSuccess: () => {
              close();
              onRevoked?.(token.id);
            },
          },
        )
      }
    >
      <p>
        Token <code className="id">{token.id}</code> stops working at once: no further machine can join with it. Machines that already
        joined with it are not affected. This cannot be undone.
      </p>
    </ConfirmButton>
  );
}
