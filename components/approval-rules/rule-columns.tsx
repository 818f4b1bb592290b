'use client';

import { actionsColumn } from '@/components/ui/data-columns';
import type { DataColumn } from '@/components/ui/data-table';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { LocalTime } from '@/components/ui/time';
import { toApiError } from '@/lib/api-errors';
import { describeMatch } from '@/lib/approval-rule-form';
import type { RuleRecord } from '@/server/rules/schemas';

interface Mutation<V> {
  isPending: boolean;
  error: unknown;
  reset: () => void;
  mutate: (variables: V, options?: { onSuccess?: () => void }) => void;
}

interface RuleActions {
  rules: RuleRecord[];
  move: Mutation<{ ruleId: string; position: number }>;
  toggle: Mutation<RuleRecord>;
  remove: Mutation<string>;
  onEdit: (rule: RuleRecord) => void;
}

/** A site's rules in order: position, name, what they match, what they do, how often they did it. */
export function ruleColumns(poolNames: Map<string, string>, actions: RuleActions | null): DataColumn<RuleRecord>[] {
  const columns: DataColumn<RuleRecord>[] = [
    { id: 'position', header: '#', className: 'cell-number', cell: (rule) => rule.position },
    {
      id: 'name',
      header: 'Name',
      rowHeader: true,
      cell: (rule) => (
        <>
          {rule.name}
          <span className="cell-sub">
            <code>{rule.id}</code>
          </span>
        </>
      ),
    },
    { id: 'match', header: 'Matches', className: 'cell-wrap', cell: (rule) => describeMatch(rule.match) },
    {
      id: 'action',
      header: 'Action',
      cell: (rule) =>
        rule.action === 'approve'
          ? `approve into ${poolNames.get(rule.poolId ?? '') ?? rule.poolId}`
          : rule.action === 'leave'
            ? 'leave for a person'
            : 'reject',
    },
    {
      id: 'admitted',
      header: 'Admitted',
      className: 'cell-number',
      cell: (rule) => (rule.maxAdmissions === null ? rule.admissions : `${rule.admissions} of ${rule.maxAdmissions}`),
    },
    {
      id: 'valid',
      header: 'Valid until',
      cell: (rule) => (rule.validUntil ? <LocalTime iso={rule.validUntil} /> : <span className="muted">no end</span>),
    },
    { id: 'state', header: 'State', cell: (rule) => (rule.enabled ? 'enabled' : <span className="muted">disabled</span>) },
  ];
  if (!actions) return columns;
  return [...columns, actionsColumn((rule) => <RuleButtons rule={rule} {...actions} />)];
}

function RuleButtons({ rule, rules, move, toggle, remove, onEdit }: RuleActions & { rule: RuleRecord }) {
  const index = rules.indexOf(rule);
  return (
    <>
      <button
        type="button"
        className="btn btn-small btn-quiet"
        aria-label={`Move ${rule.name} up`}
        disabled={index === 0 || move.isPending}
        onClick={() => move.mutate({ ruleId: rule.id, position: index })}
      >
        ↑
      </button>
      <button
        type="button"
        className="btn btn-small btn-quiet"
        aria-label={`Move ${rule.name} down`}
        disabled={index === rules.length - 1 || move.isPending}
        onClick={() => move.mutate({ ruleId: rule.id, position: index + 2 })}
      >
        ↓
      </button>
      <button
        type="button"
        className="btn btn-small btn-quiet"
        aria-label={`${rule.enabled ? 'Disable' : 'Enable'} ${rule.name}`}
        disabled={toggle.isPending}
        onClick={() => toggle.mutate(rule)}
      >
        {rule.enabled ? 'Disable' : 'Enable'}
      </button>
      <button type="button" className="btn btn-small btn-quiet" aria-label={`Edit ${rule.name}`} onClick={() => onEdit(rule)}>
        Edit
      </button>
      <ConfirmButton
        label="Delete"
        ariaLabel={`Delete ${rule.name}`}
        title={`Delete rule ${rule.name}?`}
        confirmLabel="Delete rule"
        pendingLabel="Deleting…"
        mutation={remove}
        errorMessage={(error) => toApiError(error).message}
        onConfirm={(close) => remove.mutate(rule.id, { onSuccess: close })}
      >
        It stops deciding at once. Requests it decided keep their decision.
      </ConfirmButton>
    </>
  );
}
