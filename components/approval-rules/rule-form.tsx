'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { Field } from '@/components/ui/field';
import { toApiError } from '@/lib/api-errors';
import type { Pool } from '@/lib/api-types';
import {
  CONDITIONS,
  ruleFieldOf,
  toRuleInput,
  validateRuleForm,
  type RuleFieldErrors,
  type RuleFormField,
  type RuleFormValues,
} from '@/lib/approval-rule-form';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import type { DryRunAnswer, RuleRecord } from '@/server/rules/schemas';
import { DryRunResult } from './dry-run-result';
import { LabelsField, labelsOfText } from '@/components/nodes/labels-field';
import { formatLabelList } from '@/protocol/api/labels';

/**
 * Create or edit one rule, with a dry run before saving: what the rule would do with the site's pending
 * requests and those of the last 7 days, and for each condition whether its value comes from what the boot
 * step vouched for or from the machine's claims.
 */
export function RuleForm({
  scope,
  pools,
  initial,
  ruleId,
  initialLabels = {},
  onDone,
}: {
  scope: { tenantId: string; siteId: string };
  pools: Pool[];
  initial: RuleFormValues;
  ruleId?: string;
  /** The rule's labels (an approving rule gives them to the nodes it admits). */
  initialLabels?: Record<string, string>;
  onDone: () => void;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [values, setValues] = useState(initial);
  const [localErrors, setLocalErrors] = useState<RuleFieldErrors>({});
  const [dryRun, setDryRun] = useState<DryRunAnswer | null>(null);
  const [labelsText, setLabelsText] = useState(() => formatLabelList(initialLabels).replaceAll(';', ', '));
  const [labelsError, setLabelsError] = useState<string | null>(null);
  const formRef = useRef<HTMLFormElement>(null);

  const save = useMutation({
    mutationFn: async (input: ReturnType<typeof toRuleInput> & { labels?: Record<string, string> }): Promise<RuleRecord> => {
      const saved = ruleId
        ? await client.approvalRules.update.mutate({ ...scope, ruleId, ...input })
        : await client.approvalRules.create.mutate({ ...scope, ...input });
      await queryClient.invalidateQueries(trpc.approvalRules.list.pathFilter());
      return saved;
    },
    onSuccess: onDone,
  });
  const dry = useMutation({
    mutationFn: (input: ReturnType<typeof toRuleInput>) =>
      client.approvalRules.dryRun.mutate({ ...scope, ...(ruleId ? { ruleId } : {}), ...input }),
    onSuccess: setDryRun,
  });
  const apiError = save.error ? toApiError(save.error) : dry.error ? toApiError(dry.error) : null;
  const errorField = apiError ? ruleFieldOf(apiError.field) : null;
  const errorFor = (field: RuleFormField) => localErrors[field] ?? (apiError && errorField === field ? apiError.message : null);

  function update(change: Partial<RuleFormValues>) {
    setValues((current) => ({ ...current, ...change }));
    setDryRun(null);
    save.reset();
    dry.reset();
    if (Object.keys(localErrors).length) setLocalErrors({});
  }
  /** Checks the form; on a problem shows every one and focuses the first. */
  function checked(): ReturnType<typeof toRuleInput> | null {
    const errors = validateRuleForm(values);
    setLocalErrors(errors);
    if (!Object.keys(errors).length) return toRuleInput(values);
    requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
    return null;
  }
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const input = checked();
    const labels = values.action === 'approve' ? labelsOfText(labelsText) : { labels: {} };
    setLabelsError('error' in labels ? labels.error : null);
    if (input && 'labels' in labels && !save.isPending)
      save.mutate(values.action === 'approve' ? { ...input, labels: labels.labels } : input);
  }
  const livePools = pools.filter((p) => p.siteId === scope.siteId && p.agent === 'bcd' && !p.archivedAt);

  return (
    <form
      ref={formRef}
      className="form panel rule-form"
      onSubmit={onSubmit}
      noValidate
      aria-label={ruleId ? 'Edit rule' : 'New rule'}
      aria-busy={save.isPending || dry.isPending}
    >
      <h2 className="detail-heading">{ruleId ? 'Edit rule' : 'New rule'}</h2>
      {apiError && !errorField && (
        <p className="form-error" role="alert">
          {apiError.message}
        </p>
      )}
      <div className="form-grid">
        <Field label="Name" error={errorFor('name')} hint='The queue shows "decided by rule <name>".'>
          {(control) => (
            <input
              {...control}
              type="text"
              maxLength={100}
              autoComplete="off"
              value={values.name}
              onChange={(e) => update({ name: e.target.value })}
            />
          )}
        </Field>
        <Field label="Action" hint="What the rule does with a discovery join it matches.">
          {(control) => (
            <select {...control} value={values.action} onChange={(e) => update({ action: e.target.value as RuleFormValues['action'] })}>
              <option value="approve">Approve into a pool (admitted at once)</option>
              <option value="reject">Reject</option>
              <option value="leave">Leave for a person</option>
            </select>
          )}
        </Field>
        {values.action === 'approve' && (
          <Field label="Pool" error={errorFor('poolId')} hint="A live bcd pool of this site.">
            {(control) => (
              <select {...control} value={values.poolId} onChange={(e) => update({ poolId: e.target.value })}>
                <option value="">Choose a pool…</option>
                {livePools.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        )}
        {values.action === 'approve' && (
          <Field label="At most" optional error={errorFor('maxAdmissions')} hint="Admissions, then the rule stops deciding.">
            {(control) => (
              <input
                {...control}
                type="number"
                inputMode="numeric"
                min={1}
                step={1}
                value={values.maxAdmissions}
                onChange={(e) => update({ maxAdmissions: e.target.value })}
              />
            )}
          </Field>
        )}
        {values.action === 'approve' && (
          <LabelsField
            value={labelsText}
            onChange={(text) => {
              setLabelsText(text);
              setLabelsError(null);
            }}
            error={labelsError}
            hint="The nodes it admits get them, over their token's."
          />
        )}
        <Field label="Valid until" optional error={errorFor('validUntil')} hint="Local time; the rule stops deciding then.">
          {(control) => (
            <input {...control} type="datetime-local" value={values.validUntil} onChange={(e) => update({ validUntil: e.target.value })} />
          )}
        </Field>
      </div>
      <fieldset
        className={`fieldset${errorFor('match') ? ' field-invalid' : ''}`}
        aria-describedby={errorFor('match') ? 'rule-match-error' : undefined}
      >
        <legend className="field-label">Conditions (every one named must hold; a list holds when any value does)</legend>
        {errorFor('match') && (
          <p id="rule-match-error" className="field-error" role="alert">
            {errorFor('match')}
          </p>
        )}
        <div className="form-grid">
          {CONDITIONS.map((c) => (
            <Field
              key={c.key}
              label={`${c.label} (${c.source === 'vouched' ? 'vouched' : 'claimed'})`}
              optional
              error={errorFor(`match.${c.key}`)}
              hint={c.hint}
            >
              {(control) =>
                c.list ? (
                  <textarea
                    {...control}
                    className="input-mono"
                    rows={2}
                    placeholder={c.placeholder}
                    value={values.conditions[c.key]}
                    onChange={(e) => update({ conditions: { ...values.conditions, [c.key]: e.target.value } })}
                  />
                ) : (
                  <input
                    {...control}
                    className="input-mono"
                    type="text"
                    placeholder={c.placeholder}
                    value={values.conditions[c.key]}
                    onChange={(e) => update({ conditions: { ...values.conditions, [c.key]: e.target.value } })}
                  />
                )
              }
            </Field>
          ))}
        </div>
        <label className="choice">
          <input type="checkbox" checked={values.discoveryOnly} onChange={(e) => update({ discoveryOnly: e.target.checked })} />
          <span className="choice-label">Only discovery (PXE) joins</span>
        </label>
        <label className="choice">
          <input type="checkbox" checked={values.enabled} onChange={(e) => update({ enabled: e.target.checked })} />
          <span className="choice-label">Enabled (a disabled rule keeps its place but decides nothing)</span>
        </label>
      </fieldset>
      {dryRun && <DryRunResult answer={dryRun} />}
      <footer className="dialog-footer">
        <button type="button" className="btn" onClick={onDone}>
          Cancel
        </button>
        <button
          type="button"
          className="btn"
          disabled={dry.isPending}
          onClick={() => {
            const input = checked();
            if (input) dry.mutate(input);
          }}
        >
          {dry.isPending ? 'Running…' : 'Dry run'}
        </button>
        <button type="submit" className="btn btn-primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : ruleId ? 'Save rule' : 'Create rule'}
        </button>
      </footer>
    </form>
  );
}
