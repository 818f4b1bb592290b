'use client';

import { Field } from '@/components/ui/field';
import type { Pool } from '@/lib/api-types';
import { TTL_PRESETS } from '@/lib/join-request-queue';
import { LabelsField } from '@/components/nodes/labels-field';
import type { DecideDialogProps } from './decide-dialog';

const plural = (count: number, one: string, many: string) => (count === 1 ? one : many);

/** What the decision does, in words: its effect, every match, uncertified TPMs and the progress of a long run. */
export function DecideNotes({
  action,
  count,
  isAllMatching,
  notVendorCertified = 0,
  progress,
}: Pick<DecideDialogProps, 'count' | 'isAllMatching' | 'notVendorCertified' | 'progress'> & { action: 'approve' | 'reject' }) {
  const isApprove = action === 'approve';
  return (
    <>
      <p>
        {isApprove
          ? `The machine${plural(count, '', 's')} may join the pool once, with the key ${plural(count, 'it', 'each')} asked with, until the approval expires.`
          : `Rejecting is final: the machine${plural(count, '', 's')} cannot join with ${plural(count, 'this request', 'these requests')}.`}
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
          TPM enrollment{plural(notVendorCertified, '', 's')} whose EK is not vendor-certified: no TPM maker vouches that{' '}
          {plural(notVendorCertified, 'it is a real TPM', 'they are real TPMs')}.
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
    </>
  );
}

interface ApproveFieldsProps {
  count: number;
  pools: Pool[];
  poolId: string;
  onPool: (poolId: string) => void;
  ttlSeconds: number;
  onTtl: (seconds: number) => void;
  labels: { text: string; error: string | null };
  onLabels: (text: string) => void;
}

/** An approval's pool (only those that would admit the requests), its lifetime presets and the nodes' labels. */
export function ApproveFields({ count, pools, poolId, onPool, ttlSeconds, onTtl, labels, onLabels }: ApproveFieldsProps) {
  return (
    <>
      {pools.length === 0 && (
        <p className="form-error" role="alert">
          No pool of this site admits {plural(count, 'this machine', 'these machines')}: a pool must run bcd, be live, and list the
          request&apos;s attestor in its policy.joinAttestors (or have no such list).
        </p>
      )}
      <Field label="Pool">
        {(control) => (
          <select {...control} value={poolId} onChange={(event) => onPool(event.target.value)}>
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
              <input type="radio" name="ttl" checked={ttlSeconds === preset.seconds} onChange={() => onTtl(preset.seconds)} />
              <span className="choice-label">{preset.label}</span>
            </label>
          ))}
        </div>
      </fieldset>
      <LabelsField
        value={labels.text}
        onChange={onLabels}
        error={labels.error}
        hint="The node gets them when it joins, over its token's (on a site that needs two approvals, over the first approver's)."
      />
    </>
  );
}
