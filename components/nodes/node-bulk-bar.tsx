'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Field } from '@/components/ui/field';
import { FormDialog } from '@/components/ui/form-dialog';
import { toApiError } from '@/lib/api-errors';
import { can } from '@/lib/can';
import { TENANTS_STALE_MS } from '@/lib/tenant-selection';
import { bulkSummary, parseKeyList, parseLabelList, runNodeBulk, type BulkAction } from '@/lib/node-bulk';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import type { NodeBulkActionName } from '@/protocol/api/node-bulk-schemas';
import type { NodeFilter } from '@/protocol/api/node-filter';

interface NodeBulkBarProps {
  tenantId: string;
  /** The list's filter: "select all matching" acts on every node it selects, on the server, a page at a time. */
  filter: NodeFilter;
  /** The rows the operator ticked on the loaded page; null: every node the filter selects ("Select all N matching"). */
  selectedIds: string[] | null;
  /** The list's exact total for the filter. */
  total: number;
}

const ACTIONS: Record<NodeBulkActionName, { label: string; verb: string; done: string; tone: 'primary' | 'danger'; says: string }> = {
  cordon: { label: 'Cordon', verb: 'Cordon', done: 'Cordoned', tone: 'primary', says: 'Cordoned nodes take no new work.' },
  uncordon: { label: 'Uncordon', verb: 'Uncordon', done: 'Uncordoned', tone: 'primary', says: 'The nodes take work again.' },
  'set-labels': {
    label: 'Set labels',
    verb: 'Label',
    done: 'Labelled',
    tone: 'primary',
    says: 'The labels are merged over each node’s own; keys listed under Remove are taken off. Labels never change authorization.',
  },
  'revoke-identity': {
    label: 'Revoke identity',
    verb: 'Revoke the identity of',
    done: 'Revoked the identity of',
    tone: 'danger',
    says: 'Every certificate of each node is revoked: its next renewal is refused and it must join again. This cannot be undone.',
  },
};

const plural = (n: number) => `${n} node${n === 1 ? '' : 's'}`;

/**
 * The fleet list's bulk actions (cordon, uncordon, set labels, revoke identity) on the ticked nodes, or on every
 * node the filter selects (the list's "Select all N matching"), with a confirmation naming the count and progress
 * while the pages run, as the join-request queue's bulk decisions do. Each node gets its own audit row on the server.
 */
export function NodeBulkBar({ tenantId, filter, selectedIds, total }: NodeBulkBarProps) {
  const trpc = useTRPC();
  // The console's cached tenant list says the operator's role; a role that may not manage nodes sees no bar.
  const tenants = useQuery(trpc.tenants.list.queryOptions({}, { staleTime: TENANTS_STALE_MS }));
  const tenant = tenants.data?.items.find((t) => t.id === tenantId);
  const [action, setAction] = useState<NodeBulkActionName | null>(null);
  const [notice, setNotice] = useState('');
  const count = selectedIds === null ? total : selectedIds.length;
  if (!tenant || !can(tenant, 'compute:nodes:manage')) return null;
  return (
    <div className="queue-actions node-bulk-bar" role="toolbar" aria-label="Bulk actions on nodes" data-testid="node-bulk-bar">
      {(Object.keys(ACTIONS) as NodeBulkActionName[]).map((name) => (
        <button
          key={name}
          type="button"
          className={`btn btn-small ${ACTIONS[name].tone === 'danger' ? 'btn-danger' : ''}`}
          disabled={count === 0}
          onClick={() => {
            setNotice('');
            setAction(name);
          }}
        >
          {ACTIONS[name].label}
          {count > 0 ? ` ${count}` : ''}
        </button>
      ))}
      <span role="status" aria-live="polite" className="queue-notice" data-testid="node-bulk-notice">
        {notice}
      </span>
      {action && (
        <BulkForm
          action={action}
          count={count}
          target={selectedIds === null ? { tenantId, matching: filter } : { tenantId, nodeIds: selectedIds }}
          onDone={(summary) => {
            setNotice(summary);
            setAction(null);
          }}
          onClose={() => setAction(null)}
        />
      )}
    </div>
  );
}

interface BulkFormProps {
  action: NodeBulkActionName;
  count: number;
  target: { tenantId: string; nodeIds: string[] } | { tenantId: string; matching: NodeFilter };
  onDone: (summary: string) => void;
  onClose: () => void;
}

/** The confirmation: what the action does, how many nodes, the labels for set-labels, then progress. */
function BulkForm({ action, count, target, onDone, onClose }: BulkFormProps) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [setText, setSetText] = useState('');
  const [removeText, setRemoveText] = useState('');
  const [labelError, setLabelError] = useState<string | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const meta = ACTIONS[action];
  const isRunning = progress !== null;

  async function run() {
    let body: BulkAction = { action };
    if (action === 'set-labels') {
      const parsed = parseLabelList(setText);
      if ('error' in parsed) return setLabelError(parsed.error);
      const remove = parseKeyList(removeText);
      if (!Object.keys(parsed.labels).length && !remove.length) return setLabelError('Set or remove at least one label.');
      body = { action, set: parsed.labels, remove };
    }
    setLabelError(null);
    setError(null);
    setProgress(0);
    try {
      const result = await runNodeBulk((input) => client.nodes.bulk.mutate(input), target, body, setProgress);
      onDone(bulkSummary(meta.done, count, result));
    } catch (failure) {
      setError(toApiError(failure).message);
    } finally {
      setProgress(null);
      void queryClient.invalidateQueries(trpc.nodes.pathFilter());
    }
  }

  return (
    <FormDialog
      open
      title={`${meta.verb} ${plural(count)}`}
      size="small"
      submitLabel={`${meta.verb} ${plural(count)}`}
      pendingLabel="Working…"
      isPending={isRunning}
      tone={meta.tone}
      error={error}
      focusCancel={action !== 'set-labels'}
      onSubmit={() => void run()}
      onClose={onClose}
    >
      <div className="dialog-body">
        <p>{meta.says}</p>
        {'matching' in target && (
          <p className="callout" data-testid="node-bulk-all-matching">
            This acts on all {plural(count)} that match the search and filters, including those not loaded on this page. Each node gets its
            own audit entry.
          </p>
        )}
        {action === 'set-labels' && (
          <>
            <Field label="Set" optional hint="key=value, separated by commas: rack=c7, env=prod" error={labelError}>
              {(control) => (
                <input {...control} name="set" type="text" value={setText} onChange={(e) => setSetText(e.target.value)} data-autofocus />
              )}
            </Field>
            <Field label="Remove" optional hint="label keys, separated by commas">
              {(control) => (
                <input {...control} name="remove" type="text" value={removeText} onChange={(e) => setRemoveText(e.target.value)} />
              )}
            </Field>
          </>
        )}
        {isRunning && (
          <div className="decide-progress">
            <progress max={count} value={Math.min(progress, count)} aria-label={`${meta.verb} nodes`} />
            <span role="status">
              {Math.min(progress, count)} of {count} done
            </span>
          </div>
        )}
      </div>
    </FormDialog>
  );
}
