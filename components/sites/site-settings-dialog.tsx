'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Choice, ChoiceGroup } from '@/components/ui/choice-group';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { fieldMessage, toApiError } from '@/lib/api-errors';
import type { Site } from '@/lib/api-types';
import { siteFieldOf, toSiteSettingsValues, toUpdateSiteInput, type SiteSettingsField, type SiteSettingsValues } from '@/lib/site-form';
import { useTRPC } from '@/lib/trpc';

/** Edits a live site's settings: everything `sites.update` accepts but the EK allow-list (its own edits). */
export function SiteSettingsDialog({ site, tenantId, onClose }: { site: Site | null; tenantId: string; onClose: () => void }) {
  return (
    <Dialog
      open={site !== null}
      onClose={onClose}
      title={site ? `Settings of site ${site.name}` : 'Site settings'}
      description="Later joins and decisions read the new settings; requests already waiting keep their expiry."
    >
      {site && <SiteSettingsForm site={site} tenantId={tenantId} onClose={onClose} />}
    </Dialog>
  );
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

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    update.mutate(toUpdateSiteInput(tenantId, site.id, values));
  }

  return (
    <form onSubmit={onSubmit} className="form" aria-busy={update.isPending} noValidate>
      {apiError && !errorField && (
        <p className="form-error" role="alert">
          {apiError.message}
        </p>
      )}
      <ChoiceGroup legend="PXE machines (discovery)" error={errorFor('approval')}>
        <Choice
          type="radio"
          name="approval"
          label="Admit machines the site knows"
          hint="An expected machine or a matching approval rule joins at once; any other waits for a person."
          checked={values.approval === 'unknown-machines'}
          onChange={() => set('approval', 'unknown-machines')}
        />
        <Choice
          type="radio"
          name="approval"
          label="Hold every machine for a person"
          hint="Every PXE machine waits in the queue, listed or not."
          checked={values.approval === 'always'}
          onChange={() => set('approval', 'always')}
        />
      </ChoiceGroup>
      <div className="form-grid">
        <Field label="A request waits (hours)" error={errorFor('discoveryPendingHours')} hint="From 1 minute (0.02) to 30 days (720).">
          {(control) => (
            <input
              {...control}
              type="number"
              min={0.02}
              max={720}
              step="any"
              value={values.discoveryPendingHours}
              onChange={(event) => set('discoveryPendingHours', event.target.value)}
              data-autofocus
            />
          )}
        </Field>
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
      <Field label="A TPM request waits (hours)" error={errorFor('tpmPendingHours')} hint="From 1 minute (0.02) to 30 days (720).">
        {(control) => (
          <input
            {...control}
            type="number"
            min={0.02}
            max={720}
            step="any"
            value={values.tpmPendingHours}
            onChange={(event) => set('tpmPendingHours', event.target.value)}
          />
        )}
      </Field>
      <ChoiceGroup legend="Approvals a join request needs" error={errorFor('requiredApprovals')}>
        <Choice
          type="radio"
          name="requiredApprovals"
          label="One"
          hint="One approval admits the machine."
          checked={values.requiredApprovals === 1}
          onChange={() => set('requiredApprovals', 1)}
        />
        <Choice
          type="radio"
          name="requiredApprovals"
          label="Two, by different people"
          hint="The first approval is recorded and the request waits for a second."
          checked={values.requiredApprovals === 2}
          onChange={() => set('requiredApprovals', 2)}
        />
      </ChoiceGroup>
      <footer className="dialog-footer">
        <button type="button" className="btn" onClick={onClose} disabled={update.isPending}>
          Cancel
        </button>
        <button type="submit" className="btn btn-primary" disabled={update.isPending}>
          {update.isPending ? 'Saving…' : 'Save settings'}
        </button>
      </footer>
    </form>
  );
}
