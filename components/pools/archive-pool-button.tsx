'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmDialog } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import type { Pool } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';

export function ArchivePoolButton({ pool, tenantId }: { pool: Pool; tenantId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [isConfirming, setConfirming] = useState(false);
  const archive = useMutation(
    trpc.pools.archive.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries(trpc.pools.list.pathFilter());
        setConfirming(false);
      },
    }),
  );
  return (
    <>
      <button type="button" className="btn btn-small btn-quiet" aria-label={`Archive pool ${pool.name}`} onClick={() => setConfirming(true)}>
        Archive
      </button>
      <ConfirmDialog
        open={isConfirming}
        title={`Archive pool ${pool.name}?`}
        confirmLabel="Archive pool"
        pendingLabel="Archiving…"
        isPending={archive.isPending}
        error={archive.error ? toApiError(archive.error).message : null}
        onConfirm={() => archive.mutate({ tenantId, poolId: pool.id })}
        onClose={() => {
          archive.reset();
          setConfirming(false);
        }}
      >
        <p>
          Archived pools are hidden unless <em>Show archived</em> is on, and there is no way to bring one back. Its id <code className="id">{pool.id}</code> stays in the audit trail.
        </p>
      </ConfirmDialog>
    </>
  );
}
