'use client';

import { useRef, useState } from 'react';
import { Field } from '@/components/ui/field';
import { FormDialog } from '@/components/ui/form-dialog';
import type { Pool } from '@/lib/api-types';
import { APPROVAL_TTL } from '@/protocol/api/join-request-schemas';
import { labelsInputOf, labelsOfText } from '@/components/nodes/labels-field';
import { ApproveFields, DecideNotes } from './decide-fields';

export interface Decision {
  action: 'approve' | 'reject';
  /** Approve only: the pool of the site the machines join. */
  poolId: string;
  ttlSeconds: number;
  reason: string;
  /** Approve only: labels the nodes get when they join, over their token's. */
  labels?: Record<string, string>;
}

export interface DecideDialogProps {
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
export function DecideDialog(props: DecideDialogProps) {
  // The form mounts per opening (and per action), so each one starts from the defaults.
  return props.action ? <DecideForm key={props.action} {...props} action={props.action} /> : null;
}

function DecideForm(props: DecideDialogProps & { action: 'approve' | 'reject' }) {
  const { action, count, pools, defaultPoolId, isPending, error, onDecide, onClose } = props;
  const [poolId, setPoolId] = useState(defaultPoolId);
  const [ttlSeconds, setTtl] = useState<number>(APPROVAL_TTL.default);
  const [reason, setReason] = useState('');
  // A rejection is final, so it carries a reason: the form says so rather than send one without.
  const [isReasonMissing, setReasonMissing] = useState(false);
  const [labelsText, setLabelsText] = useState('');
  const [labelsError, setLabelsError] = useState<string | null>(null);
  const reasonRef = useRef<HTMLInputElement>(null);
  const isApprove = action === 'approve';
  const what = count === 1 ? 'request' : `${count} requests`;

  function submit() {
    if (!isApprove && !reason.trim()) {
      setReasonMissing(true);
      reasonRef.current?.focus();
      return;
    }
    const labels = isApprove ? labelsOfText(labelsText) : null;
    if (labels && 'error' in labels) {
      setLabelsError(labels.error);
      return;
    }
    onDecide({ action, poolId, ttlSeconds, reason: reason.trim(), ...(isApprove ? labelsInputOf(labelsText) : {}) });
  }

  return (
    <FormDialog
      open
      title={isApprove ? `Approve ${what}` : `Reject ${what}`}
      size="small"
      submitLabel={isApprove ? 'Approve' : 'Reject'}
      pendingLabel={isApprove ? 'Approving…' : 'Rejecting…'}
      tone={isApprove ? 'primary' : 'danger'}
      cannotSubmit={isApprove && !poolId}
      isPending={isPending}
      error={error}
      onSubmit={submit}
      onClose={onClose}
    >
      <div className="dialog-body">
        <DecideNotes {...props} />
        {isApprove && (
          <ApproveFields
            count={count}
            pools={pools}
            poolId={poolId}
            onPool={setPoolId}
            ttlSeconds={ttlSeconds}
            onTtl={setTtl}
            labels={{ text: labelsText, error: labelsError }}
            onLabels={(text) => {
              setLabelsText(text);
              setLabelsError(null);
            }}
          />
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
              ref={reasonRef}
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
    </FormDialog>
  );
}
