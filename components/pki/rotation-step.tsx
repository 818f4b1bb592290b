'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmDialog } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import { useTRPC } from '@/lib/trpc';
import { PKI_KEY_KIND_LABELS } from '@/protocol/api/pki-rotation-schemas';
import type { KeyStatus } from './pki-view';

const STEP_LABEL = { prepare: 'Prepare', activate: 'Activate', retire: 'Retire' } as const;

/** What the step does, said before it is taken. */
function stepText(status: KeyStatus): string {
  const label = PKI_KEY_KIND_LABELS[status.kind];
  switch (status.nextStep) {
    case 'prepare':
      return `The server makes the next ${label} and seals it under BETTER_COMPUTE_SECRET. Machines trust it from their next trust set; nothing uses it yet. (To import a key kept offline, use better-compute pki rotate ${status.kind} --prepare --from.)`;
    case 'activate':
      return `The prepared ${label} goes into use; the previous stays trusted until you retire it. Machines that do not hold the new trust set yet cannot verify what the new key signs.`;
    case 'retire':
      return `The previous ${label} is trusted nowhere from now on. A machine that does not hold the current trust set must be re-joined.`;
  }
}

/** The next step of a key's rotation, as a button that asks first (and, to force a node CA's retirement, for a reason). */
export function RotationStepButton({ status }: { status: KeyStatus }) {
  const [isOpen, setOpen] = useState(false);
  const step = status.nextStep;
  const label = PKI_KEY_KIND_LABELS[status.kind];
  return (
    <>
      <button
        type="button"
        className={`btn btn-small ${step === 'retire' ? 'btn-danger' : 'btn-primary'}`}
        aria-label={`${STEP_LABEL[step]} ${label}`}
        onClick={() => setOpen(true)}
      >
        {STEP_LABEL[step]}
      </button>
      {isOpen && <StepDialog status={status} onClose={() => setOpen(false)} />}
    </>
  );
}

function StepDialog({ status, onClose }: { status: KeyStatus; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const options = { onSuccess: () => queryClient.invalidateQueries(trpc.pki.rotation.status.pathFilter()).then(onClose) };
  const prepare = useMutation(trpc.pki.rotation.prepare.mutationOptions(options));
  const activate = useMutation(trpc.pki.rotation.activate.mutationOptions(options));
  const retire = useMutation(trpc.pki.rotation.retire.mutationOptions(options));
  const mutation = { prepare, activate, retire }[status.nextStep];
  const [force, setForce] = useState(false);
  const step = status.nextStep;
  const label = PKI_KEY_KIND_LABELS[status.kind];
  const live = status.liveCertificatesOfPrevious ?? 0;
  const gateways = status.gatewaysOnPrevious ?? 0;
  const needsForce = step === 'retire' && (live > 0 || gateways > 0);
  const { trustVersion, nodesReady, nodesTotal } = status.readiness;
  const error = mutation.error ? toApiError(mutation.error) : null;

  function submit(reason: string) {
    if (step === 'prepare') return prepare.mutate({ kind: status.kind });
    if (step === 'activate') return activate.mutate({ kind: status.kind });
    retire.mutate(force ? { kind: status.kind, force: true, reason } : { kind: status.kind });
  }

  return (
    <ConfirmDialog
      open
      title={`${STEP_LABEL[step]} ${label}`}
      confirmLabel={`${STEP_LABEL[step]}${force ? ' anyway' : ''}`}
      pendingLabel={`${STEP_LABEL[step].replace(/e$/, '')}ing…`}
      tone={step === 'retire' ? 'danger' : 'primary'}
      isPending={mutation.isPending}
      error={error && error.field !== 'reason' ? error.message : null}
      // Forcing a retirement is recorded in the audit log with its reason.
      reason={
        force
          ? {
              label: 'Reason',
              hint: 'Required to force. Recorded in the audit log.',
              required: true,
              error: error?.field === 'reason' ? error.message : null,
            }
          : undefined
      }
      cannotConfirm={needsForce && !force}
      onConfirm={submit}
      onClose={onClose}
    >
      <p>{stepText(status)}</p>
      <p>
        {nodesReady} of {nodesTotal} nodes hold the trust set this step needs (trust version {trustVersion}).
      </p>
      {needsForce && gateways > 0 && (
        <p className="callout callout-warn" data-testid="pki-gateways-on-previous">
          {gateways} gateway{gateways === 1 ? '' : 's'} seen in the last minute still {gateways === 1 ? 'serves' : 'serve'} a leaf of the
          previous serving CA: retiring is refused until {gateways === 1 ? 'it serves' : 'they serve'} the new CA&apos;s leaf (within
          seconds of reaching the API). Forcing it strands {gateways === 1 ? 'that gateway' : 'those gateways'}.
        </p>
      )}
      {needsForce && live > 0 && (
        <p className="callout callout-warn" data-testid="pki-live-certificates">
          {live} certificate{live === 1 ? '' : 's'} issued by the previous node CA {live === 1 ? 'is' : 'are'} still valid: retiring is
          refused until {live === 1 ? 'it renews or expires' : 'they renew or expire'}. Forcing it cuts those machines off.
        </p>
      )}
      {needsForce && (
        <label className="choice">
          <input type="checkbox" checked={force} onChange={(event) => setForce(event.target.checked)} />
          <span className="choice-label">Retire anyway (force)</span>
        </label>
      )}
    </ConfirmDialog>
  );
}
