'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import type { Pool } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';

export function ArchivePoolButton({ pool, tenantId }: { pool: Pool; tenantId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const archive = useMutation(
    trpc.pools.archive.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries(trpc.pools.list.pathFilter()),
    }),
  );
  return (
    <ConfirmButton
      label="Archive"
      ariaLabel={`Archive pool ${pool.name}`}
      title={`Archive pool ${pool.name}?`}
      confirmLabel="Archive pool"
      pendingLabel="Archiving…"
      mutation={archive}
      errorMessage={(error) => toApiError(error).message}
      onConfirm={(close) => archive.mutate({ tenantId, poolId: pool.id }, { onSuccess: close })}
    >
      <p>
        Archived pools are hidden unless <em>Show archived</em> is on, and there is no way to bring one back. Its id{' '}
        <code className="id">{pool.id}</code> stays in the audit trail.
      </p>
    </ConfirmButton>
  );
}
