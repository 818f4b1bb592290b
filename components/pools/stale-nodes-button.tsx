'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { FormDialog } from '@/components/ui/form-dialog';
import { fieldMessage, toApiError } from '@/lib/api-errors';
import type { Pool } from '@/lib/api-types';
import { parseStaleForm, type StaleFormErrors, type StaleFormField } from '@/lib/stale-nodes-form';
import { useTRPC } from '@/lib/trpc';
import { STALE_NODES_MAX_DAYS } from '@/protocol/api/stale-nodes';
import { StaleNodesPlan } from './stale-nodes-plan';

const title = (pool: Pool) => `Stale nodes of pool ${pool.name}`;
const DESCRIPTION =
  'Nodes disconnected for a number of days are cordoned; still disconnected some days later, they are retired as a delete would: certificates revoked, hardware key, MACs and TPM EK freed.';

/** "Stale nodes": the pool's stale-node policy (set by those who manage pools) and its dry run. */
export function StaleNodesButton({ pool, tenantId, canManage }: { pool: Pool; tenantId: string; canManage: boolean }) {
  const [isOpen, setOpen] = useState(false);
  const close = () => setOpen(false);
  return (
    <>
      <button
        type="button"
        className="btn btn-small btn-quiet"
        aria-label={`Stale-node policy of pool ${pool.name}`}
        onClick={() => setOpen(true)}
      >
        Stale nodes
      </button>
      {isOpen &&
        (canManage && !pool.archivedAt ? (
          <StalePolicyForm pool={pool} tenantId={tenantId} onClose={close} />
        ) : (
          <Dialog open onClose={close} title={title(pool)} description={DESCRIPTION}>
            <div className="dialog-body">
              <PolicySummary pool={pool} />
              {canManage && pool.policy.staleNodes && <RemovePolicyButton pool={pool} tenantId={tenantId} />}
            </div>
            <div className="dialog-body">
              <StaleNodesPlan pool={pool} tenantId={tenantId} />
            </div>
            <footer className="dialog-footer">
              <button type="button" className="btn" onClick={close}>
                Close
              </button>
            </footer>
          </Dialog>
        ))}
    </>
  );
}

function PolicySummary({ pool }: { pool: Pool }) {
  const policy = pool.policy.staleNodes;
  if (!policy) return <p>This pool has no stale-node policy.</p>;
  return (
    <p>
      Nodes disconnected {policy.cordonAfterDays} days are cordoned, and retired {policy.retireAfterDays} days after that cordon if still
      disconnected.
    </p>
  );
}

/** An archived pool's policy keeps applying to its nodes; it can be removed, not set anew. */
function RemovePolicyButton({ pool, tenantId }: { pool: Pool; tenantId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const remove = useMutation(
    trpc.pools.setStaleNodesPolicy.mutationOptions({ onSuccess: () => queryClient.invalidateQueries(trpc.pools.pathFilter()) }),
  );
  return (
    <>
      <button
        type="button"
        className="btn"
        disabled={remove.isPending}
        onClick={() => remove.mutate({ tenantId, poolId: pool.id, staleNodes: null })}
      >
        {remove.isPending ? 'Removing…' : 'Remove policy'}
      </button>
      {remove.error && (
        <p className="form-error" role="alert">
          {toApiError(remove.error).message}
        </p>
      )}
    </>
  );
}

/** The policy's form, with the dry run under it (of the saved policy). */
function StalePolicyForm({ pool, tenantId, onClose }: { pool: Pool; tenantId: string; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const current = pool.policy.staleNodes;
  const [isOn, setOn] = useState(Boolean(current));
  const [values, setValues] = useState<Record<StaleFormField, string>>({
    cordonAfterDays: String(current?.cordonAfterDays ?? 30),
    retireAfterDays: String(current?.retireAfterDays ?? 30),
  });
  const [errors, setErrors] = useState<StaleFormErrors>({});
  const save = useMutation(
    trpc.pools.setStaleNodesPolicy.mutationOptions({ onSuccess: () => queryClient.invalidateQueries(trpc.pools.pathFilter()) }),
  );
  const error = save.error ? toApiError(save.error) : null;
  const errorOf = (field: StaleFormField) =>
    errors[field] ?? (error?.field === `staleNodes.${field}` ? fieldMessage({ ...error, field: `staleNodes.${field}` }) : null);
  const formError = error && !error.field?.startsWith('staleNodes.') ? error : null;
  const dayInput = (field: StaleFormField) => ({
    type: 'number',
    inputMode: 'numeric' as const,
    min: 1,
    max: STALE_NODES_MAX_DAYS,
    step: 1,
    disabled: !isOn,
    value: values[field],
    onChange: (e: React.ChangeEvent<HTMLInputElement>) => setValues({ ...values, [field]: e.target.value }),
  });
  return (
    <FormDialog
      open
      title={title(pool)}
      description={DESCRIPTION}
      submitLabel="Save policy"
      pendingLabel="Saving…"
      isPending={save.isPending}
      error={formError?.message}
      cancelLabel="Close"
      onSubmit={() => {
        if (!isOn) return save.mutate({ tenantId, poolId: pool.id, staleNodes: null });
        const parsed = parseStaleForm(values);
        setErrors(parsed.errors);
        if (parsed.policy) save.mutate({ tenantId, poolId: pool.id, staleNodes: parsed.policy });
      }}
      onClose={onClose}
    >
      <div className="dialog-body">
        <label className="toggle">
          <input type="checkbox" checked={isOn} onChange={(e) => setOn(e.target.checked)} data-autofocus />
          Cordon and retire stale nodes of this pool
        </label>
        <Field
          label="Cordon after (days disconnected)"
          hint={`1 to ${STALE_NODES_MAX_DAYS}. A node that reconnects is left alone.`}
          error={errorOf('cordonAfterDays')}
        >
          {(control) => <input {...control} {...dayInput('cordonAfterDays')} />}
        </Field>
        <Field
          label="Retire after (more days, once cordoned)"
          hint={`1 to ${STALE_NODES_MAX_DAYS}, counted from the policy's cordon.`}
          error={errorOf('retireAfterDays')}
        >
          {(control) => <input {...control} {...dayInput('retireAfterDays')} />}
        </Field>
        {save.isSuccess && <p role="status">Saved. The policy runs every few minutes on the server.</p>}
      </div>
      <div className="dialog-body">
        <StaleNodesPlan pool={pool} tenantId={tenantId} />
      </div>
    </FormDialog>
  );
}
