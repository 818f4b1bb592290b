'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { FormDialog } from '@/components/ui/form-dialog';
import { Field } from '@/components/ui/field';
import { toApiError } from '@/lib/api-errors';
import type { Pool, Site } from '@/lib/api-types';
import {
  ACCEPTANCE_CHECKS,
  BUILT_IN_CHECKS,
  formFieldOf,
  initialPoolValues,
  JOIN_ATTESTOR_HINTS,
  JOIN_ATTESTORS,
  POOL_AGENT_HINTS,
  POOL_AGENTS,
  poolFieldMessage,
  toCreatePoolInput,
  type PoolFormField,
  type PoolFormValues,
} from '@/lib/pool-form';
import { validatePoolForm, type PoolFieldErrors } from '@/lib/pool-form-validate';
import { useTRPC } from '@/lib/trpc';
import { Choice, ChoiceGroup, RadioChoices } from '@/components/ui/choice-group';

const AGENT_CHOICES = POOL_AGENTS.map((agent) => ({ value: agent, label: <code>{agent}</code>, hint: POOL_AGENT_HINTS[agent] }));

interface CreatePoolDialogProps {
  open: boolean;
  tenantId: string;
  /** Live sites only: a pool cannot be created in an archived site. */
  sites: Site[];
  onClose: () => void;
  onCreated: (pool: Pool, siteName: string) => void;
}

/** Creates a pool in one of the tenant's live sites, with its agent, join attestors and acceptance checks. */
export function CreatePoolDialog({ open, ...form }: CreatePoolDialogProps) {
  // The form mounts per opening, so each one starts empty.
  return open ? <CreatePoolForm {...form} /> : null;
}

function CreatePoolForm({ tenantId, sites, onClose, onCreated }: Omit<CreatePoolDialogProps, 'open'>) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [values, setValues] = useState<PoolFormValues>(() => initialPoolValues(sites[0]?.id ?? ''));
  const create = useMutation(
    trpc.pools.create.mutationOptions({
      onSuccess: async (pool) => {
        await queryClient.invalidateQueries(trpc.pools.list.pathFilter());
        onCreated(pool, sites.find((site) => site.id === pool.siteId)?.name ?? pool.siteId);
      },
    }),
  );

  // The server decides validity; its error names the field it is about, and shows next to that field.
  const apiError = create.error ? toApiError(create.error) : null;
  const errorField = apiError ? formFieldOf(apiError.field) : null;
  // The form's own findings first, all at once; the server's (one at a time) where these found nothing.
  const [localErrors, setLocalErrors] = useState<PoolFieldErrors>({});
  const errorFor = (field: PoolFormField) =>
    localErrors[field] ?? (apiError && errorField === field ? poolFieldMessage(apiError, values) : null);

  function update<K extends keyof PoolFormValues>(key: K, value: PoolFormValues[K]) {
    setValues((current) => ({ ...current, [key]: value }));
    if (create.isError) create.reset();
    if (Object.keys(localErrors).length) setLocalErrors({});
  }

  function validate() {
    const errors = validatePoolForm(tenantId, values);
    setLocalErrors(errors);
    return !Object.keys(errors).length;
  }

  return (
    <FormDialog
      open
      title="Create pool"
      description="A pool belongs to one site; its machines join under the pool’s policy."
      submitLabel="Create pool"
      pendingLabel="Creating…"
      isPending={create.isPending}
      cannotSubmit={!values.siteId}
      error={apiError && !errorField ? apiError.message : null}
      validate={validate}
      onSubmit={() => create.mutate(toCreatePoolInput(tenantId, values))}
      onClose={onClose}
    >
      <div className="form-grid">
        <Field label="Site" error={errorFor('siteId')}>
          {(control) => (
            <select {...control} value={values.siteId} onChange={(event) => update('siteId', event.target.value)} required>
              {sites.map((site) => (
                <option key={site.id} value={site.id}>
                  {site.name} ({site.kind})
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Name" error={errorFor('name')} hint="Lower-case letters, digits and inner dashes; unique in the site.">
          {(control) => (
            <input
              {...control}
              value={values.name}
              onChange={(event) => update('name', event.target.value)}
              required
              maxLength={63}
              autoComplete="off"
              spellCheck={false}
              placeholder="gpu-h100"
              data-autofocus
            />
          )}
        </Field>
      </div>

      <ChoiceGroup legend="Agent" error={errorFor('agent')}>
        <RadioChoices name="agent" options={AGENT_CHOICES} value={values.agent} onChange={(agent) => update('agent', agent)} />
      </ChoiceGroup>

      <ChoiceGroup
        legend="Join attestors"
        optional
        hint="Tick to restrict how machines may join this pool; none ticked leaves it unrestricted."
        error={errorFor('joinAttestors')}
      >
        <div className="choice-columns">
          {JOIN_ATTESTORS.map((attestor) => (
            <Choice
              key={attestor}
              label={<code>{attestor}</code>}
              hint={JOIN_ATTESTOR_HINTS[attestor]}
              checked={values.joinAttestors.includes(attestor)}
              onChange={(checked) =>
                update('joinAttestors', checked ? [...values.joinAttestors, attestor] : values.joinAttestors.filter((a) => a !== attestor))
              }
            />
          ))}
        </div>
      </ChoiceGroup>

      <ChoiceGroup legend="Kubernetes" error={errorFor('platformOperated')}>
        <Choice
          label="Platform-operated"
          hint="Nodes that join through a hosted (Kubernetes DaemonSet) token keep platform trust instead of becoming tenant-controlled. Honoured only when the platform owns the pool."
          checked={values.platformOperated}
          onChange={(checked) => update('platformOperated', checked)}
        />
      </ChoiceGroup>

      <ChoiceGroup
        legend="Acceptance checks"
        optional
        error={errorFor('acceptance')}
        hint="What bcd measures on a new node before it is adopted; a node that fails one stays adopting."
      >
        {BUILT_IN_CHECKS.map((check) => {
          const { hint, threshold } = ACCEPTANCE_CHECKS[check];
          const value = values.acceptance[check];
          return (
            <div key={check} className="choice-with-input">
              <Choice
                label={<code>{check}</code>}
                hint={hint}
                checked={value !== undefined}
                onChange={(checked) => {
                  const next = { ...values.acceptance };
                  if (checked) next[check] = threshold?.initial ?? '';
                  else delete next[check];
                  update('acceptance', next);
                }}
              />
              {threshold && value !== undefined && (
                <input
                  type="number"
                  className="choice-input"
                  aria-label={threshold.label}
                  min={check === 'gpu-count' ? 0 : 1}
                  step={check === 'min-memory' ? 'any' : 1}
                  value={value}
                  onChange={(event) => update('acceptance', { ...values.acceptance, [check]: event.target.value })}
                />
              )}
            </div>
          );
        })}
      </ChoiceGroup>

      <Field
        label="TPM EK allow-list"
        optional
        error={errorFor('tpmEkAllowList')}
        hint="EK hashes (hex SHA-256 of a TPM's endorsement key), separated by commas or lines. A listed TPM joins this pool without an operator."
      >
        {(control) => (
          <textarea
            {...control}
            value={values.tpmEkAllowList}
            onChange={(event) => update('tpmEkAllowList', event.target.value)}
            rows={2}
            autoComplete="off"
            spellCheck={false}
          />
        )}
      </Field>
    </FormDialog>
  );
}
