'use client';

import { useState } from 'react';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import type { Pool } from '@/lib/api-types';
import { TTL_PRESETS } from '@/lib/join-request-queue';
import { APPROVAL_TTL } from '@/protocol/api/join-request-schemas';
import { LabelsField, labelsInputOf, labelsOfText } from '@/components/nodes/labels-field';

export interface Decision {
  action: 'approve' | 'reject';
  /** Approve only: the pool of the site the machines join. */
  poolId: string;
  ttlSeconds: number;
  reason: string;
  /** Approve only: labels the nodes get when they join, over their token's. */
  labels?: Record<string, string>;
}

interface DecideDialogProps {
  action: 'approve' | 'reject' | null;
  /** How many requests the decision covers. */
  count: number;
  /** The decision takes every request matching the queue's filter (decided on the server), not a selection. */
  isAllMatching?: boolean;
  /** While a decision of every match runs: how many are decided of how many. */
  progress?: { done: number; total: number } | null;
  /** Of the requests decided, how many are tpm enrollments whose EK is not vendor-certified (named before approving). */
  notVendorCertified?: number;
  /** The pools the join would admit the requests into (approvablePools): the only ones offered. */
  pools: Pool[];
  defaultPoolId: string;
  isPending: boolean;
  error: string | null;
  onDecide: (decision: Decision) => void;
  onClose: () => void;
}

/** Approve (pool, lifetime with presets, optional reason) or reject (a required reason) one request or a selection. */
export function DecideDialog({
  action,
  count,
  isAllMatching,
  notVendorCertified,
  progress,
  pools,
  defaultPoolId,
  isPending,
  error,
  onDecide,
  onClose,
}: DecideDialogProps) {
  const what = count === 1 ? 'request' : `${count} requests`;
  const title = action === 'approve' ? `Approve ${what}` : `Reject ${what}`;
  return (
    <Dialog open={action !== null} onClose={isPending ? () => {} : onClose} title={title} size="small">
      {action && (
        <DecideForm
          key={action}
          action={action}
          count={count}
          isAllMatching={isAllMatching}
          notVendorCertified={notVendorCertified}
          progress={progress}
          pools={pools}
          defaultPoolId={defaultPoolId}
          isPending={isPending}
          error={error}
          onDecide={onDecide}
          onClose={onClose}
        />
      )}
    </Dialog>
  );
}

function DecideForm({
  action,
  count,
  isAllMatching,
  notVendorCertified = 0,
  progress,
  pools,
  defaultPoolId,
  isPending,
  error,
  onDecide,
  onClose,
}: Omit<DecideDialogProps, 'action'> & { action: 'approve' | 'reject' }) {
  const [poolId, setPoolId] = useState(defaultPoolId);
  const [ttlSeconds, setTtl] = useState<number>(APPROVAL_TTL.default);
  const [reason, setReason] = useState('');
  // A rejection is final, so it carries a reason: the form says so rather than send one without.
  const [isReasonMissing, setReasonMissing] = useState(false);
  const [labelsText, setLabelsText] = useState('');
  const [labelsError, setLabelsError] = useState<string | null>(null);
  const isApprove = action === 'approve';
  return (
    <form
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        if (!isApprove && !reason.trim()) {
          setReasonMissing(true);
          event.currentTarget.querySelector<HTMLInputElement>('input[name="reason"]')?.focus();
          return;
        }
        const labels = isApprove ? labelsOfText(labelsText) : null;
        if (labels && 'error' in labels) {
          setLabelsError(labels.error);
          return;
        }
        onDecide({ action, poolId, ttlSeconds, reason: reason.trim(), ...(isApprove ? labelsInputOf(labelsText) : {}) });
      }}
    >
      <div className="dialog-body">
        <p>
          {isApprove
            ? `The machine${count === 1 ? '' : 's'} may join the pool once, with the key ${count === 1 ? 'it' : 'each'} asked with, until the approval expires.`
            : `Rejecting is final: the machine${count === 1 ? '' : 's'} cannot join with ${count === 1 ? 'this request' : 'these requests'}.`}
        </p>
        {isAllMatching && (
          <p className="callout" data-testid="decide-all-matching">
            This {isApprove ? 'approves' : 'rejects'} all {count} pending requests that match the search and filters, including those not
            loaded on this page. It cannot be undone.
          </p>
        )}
        {isApprove && notVendorCertified > 0 && (
          <p className="callout callout-warn" data-testid="decide-not-certified">
            {notVendorCertified === count && count === 1
              ? 'This request is'
              : `${notVendorCertified} of ${isAllMatching ? 'these' : 'the selected'} ${count} requests ${notVendorCertified === 1 ? 'is a' : 'are'}`}{' '}
            TPM enrollment{notVendorCertified === 1 ? '' : 's'} whose EK is not vendor-certified: no TPM maker vouches that{' '}
            {notVendorCertified === 1 ? 'it is a real TPM' : 'they are real TPMs'}.
          </p>
        )}
        {progress && (
          <div className="decide-progress">
            <progress max={progress.total} value={progress.done} aria-label={`${isApprove ? 'Approving' : 'Rejecting'} requests`} />
            <span role="status">
              {progress.done} of {progress.total} {isApprove ? 'approved' : 'rejected'}
            </span>
          </div>
        )}
        {isApprove && (
          <>
            {pools.length === 0 && (
              <p className="form-error" role="alert">
                No pool of this site admits {count === 1 ? 'this machine' : 'these machines'}: a pool must run bcd, be live, and list the
                request&apos;s attestor in its policy.joinAttestors (or have no such list).
              </p>
            )}
            <Field label="Pool">
              {(control) => (
                <select {...control} value={poolId} onChange={(event) => setPoolId(event.target.value)}>
                  {pools.map((pool) => (
                    <option key={pool.id} value={pool.id}>
                      {pool.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <fieldset className="fieldset">
              <legend className="field-label">Approval lifetime</legend>
              <div className="presets">
                {TTL_PRESETS.map((preset) => (
                  <label key={preset.seconds} className="choice choice-inline">
                    <input type="radio" name="ttl" checked={ttlSeconds === preset.seconds} onChange={() => setTtl(preset.seconds)} />
                    <span className="choice-label">{preset.label}</span>
                  </label>
                ))}
              </div>
            </fieldset>
            <LabelsField
              value={labelsText}
              onChange={(text) => {
                setLabelsText(text);
                setLabelsError(null);
              }}
              error={labelsError}
              hint="The node gets them when it joins, over its token's (on a site that needs two approvals, over the first approver's)."
            />
          </>
        )}
        <Field
          label="Reason"
          optional={isApprove}
          error={isReasonMissing && !reason.trim() ? 'Say why: a rejection is final, so it needs a reason.' : undefined}
          hint={
            isApprove
              ? 'Recorded in the audit log and shown with the decision.'
              : 'Required. Recorded in the audit log and shown with the rejection.'
          }
        >
          {(control) => (
            <input
              {...control}
              name="reason"
              type="text"
              maxLength={500}
              required={!isApprove}
              value={reason}
              onChange={(event) => setReason(event.target.value)}
              data-autofocus
            />
          )}
        </Field>
      </div>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <footer className="dialog-footer">
        <button type="button" className="btn" onClick={onClose} disabled={isPending}>
          Cancel
        </button>
        <button type="submit" className={`btn ${isApprove ? 'btn-primary' : 'btn-danger'}`} disabled={isPending || (isApprove && !poolId)}>
          {isPending ? (isApprove ? 'Approving…' : 'Rejecting…') : isApprove ? 'Approve' : 'Reject'}
        </button>
      </footer>
    </form>
  );
}
