'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Choice, ChoiceGroup, RadioChoices } from '@/components/ui/choice-group';
import { Field } from '@/components/ui/field';
import { FormDialog } from '@/components/ui/form-dialog';
import { fieldMessage, toApiError } from '@/lib/api-errors';
import type { Site } from '@/lib/api-types';
import { siteFieldOf, toSiteSettingsValues, toUpdateSiteInput, type SiteSettingsField, type SiteSettingsValues } from '@/lib/site-form';
import { useTRPC } from '@/lib/trpc';

/** Edits a live site's settings: everything `sites.update` accepts but the EK allow-list (its own edits). */
const APPROVAL_CHOICES = [
  {
    value: 'unknown-machines',
    label: 'Admit machines the site knows',
    hint: 'An expected machine or a matching approval rule joins at once; any other waits for a person.',
  },
  { value: 'always', label: 'Hold every machine for a person', hint: 'Every PXE machine waits in the queue, listed or not.' },
] as const;

const APPROVALS_NEEDED_CHOICES = [
  { value: 1, label: 'One', hint: 'One approval admits the machine.' },
  { value: 2, label: 'Two, by different people', hint: 'The first approval is recorded and the request waits for a second.' },
] as const;

export function SiteSettingsDialog({ site, tenantId, onClose }: { site: Site | null; tenantId: string; onClose: () => void }) {
  // The form mounts per opening, so each one starts from the site's current settings.
  return site ? <SiteSettingsForm site={site} tenantId={tenantId} onClose={onClose} /> : null;
}

function SiteSettingsForm({ site, tenantId, onClose }: { site: Site; tenantId: string; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [values, setValues] = useState<SiteSettingsValues>(() => toSiteSettingsValues(site));
  const update = useMutation(
    trpc.sites.update.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries(trpc.sites.pathFilter());
        onClose();
      },
    }),
  );
  const apiError = update.error ? toApiError(update.error) : null;
  const errorField = apiError ? siteFieldOf(apiError.field) : null;
  const errorFor = (field: SiteSettingsField) => (apiError && errorField === field ? fieldMessage(apiError) : null);

  function set<K extends keyof SiteSettingsValues>(key: K, value: SiteSettingsValues[K]) {
    setValues((current) => ({ ...current, [key]: value }));
    if (update.isError) update.reset();
  }

  return (
    <FormDialog
      open
      title={`Settings of site ${site.name}`}
      description="Later joins and decisions read the new settings; requests already waiting keep their expiry."
      submitLabel="Save settings"
      pendingLabel="Saving…"
      isPending={update.isPending}
      error={apiError && !errorField ? apiError.message : null}
      onSubmit={() => update.mutate(toUpdateSiteInput(tenantId, site.id, values))}
      onClose={onClose}
    >
      <ChoiceGroup legend="PXE machines (discovery)" error={errorFor('approval')}>
        <RadioChoices name="approval" options={APPROVAL_CHOICES} value={values.approval} onChange={(value) => set('approval', value)} />
      </ChoiceGroup>
      <div className="form-grid">
        <HoursField
          label="A request waits (hours)"
          error={errorFor('discoveryPendingHours')}
          value={values.discoveryPendingHours}
          onChange={(value) => set('discoveryPendingHours', value)}
          autoFocus
        />
        <Field
          label="Most requests waiting at once"
          error={errorFor('maxPendingRequests')}
          hint="A full queue refuses new machines until one is decided."
        >
          {(control) => (
            <input
              {...control}
              type="number"
              min={1}
              max={100000}
              step={1}
              value={values.maxPendingRequests}
              onChange={(event) => set('maxPendingRequests', event.target.value)}
            />
          )}
        </Field>
      </div>
      <ChoiceGroup legend="TPM enrollment" error={errorFor('tpmEnrollment')}>
        <Choice
          label="Let unlisted TPMs wait in the queue"
          hint="Off: a TPM whose endorsement key is neither vendor-rooted nor on the site's allow-list is refused."
          checked={values.tpmEnrollment}
          onChange={(checked) => set('tpmEnrollment', checked)}
        />
      </ChoiceGroup>
      <HoursField
        label="A TPM request waits (hours)"
        error={errorFor('tpmPendingHours')}
        value={values.tpmPendingHours}
        onChange={(value) => set('tpmPendingHours', value)}
      />
      <ChoiceGroup legend="Approvals a join request needs" error={errorFor('requiredApprovals')}>
        <RadioChoices
          name="requiredApprovals"
          options={APPROVALS_NEEDED_CHOICES}
          value={values.requiredApprovals}
          onChange={(value) => set('requiredApprovals', value)}
        />
      </ChoiceGroup>
    </FormDialog>
  );
}

/** How long a request of the site waits for a decision, in hours. */
function HoursField(props: { label: string; error: string | null; value: string; onChange: (value: string) => void; autoFocus?: boolean }) {
  return (
    <Field label={props.label} error={props.error} hint="From 1 minute (0.02) to 30 days (720).">
      {(control) => (
        <input
          {...control}
          type="number"
          min={0.02}
          max={720}
          step="any"
          value={props.value}
          onChange={(event) => props.onChange(event.target.value)}
          data-autofocus={props.autoFocus || undefined}
        />
      )}
    </Field>
  );
}
