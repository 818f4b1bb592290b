'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { FormDialog } from '@/components/ui/form-dialog';
import { Field } from '@/components/ui/field';
import { toApiError } from '@/lib/api-errors';
import type { Pool, Tenant } from '@/lib/api-types';
import {
  CUSTOM_TTL,
  EXPECT_FIELDS,
  EXPECT_KEYS,
  INITIAL_JOIN_TOKEN_VALUES,
  joinTokenErrorMessage,
  joinTokenFieldOf,
  newIdempotencyKey,
  toCreateJoinTokenInput,
  TTL_PRESETS,
  type CreateJoinTokenInput,
  type JoinToken,
  type JoinTokenFormField,
  type JoinTokenFormValues,
} from '@/lib/join-token-form';
import { validateJoinTokenForm, type JoinTokenFieldErrors } from '@/lib/join-token-validate';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import { Choice, ChoiceGroup } from '@/components/ui/choice-group';
import { LabelsField, labelsInputOf, labelsOfText } from '@/components/nodes/labels-field';

interface CreateJoinTokenDialogProps {
  open: boolean;
  tenant: Tenant;
  pool: Pool;
  onClose: () => void;
  /** `token` is null when the server answered a replay of this dialog's idempotency key. */
  onCreated: (record: JoinToken, token: string | null) => void;
}

/** Mints a join token for `pool`; the bearer token goes to `onCreated` (the one-time panel), nowhere else. */
export function CreateJoinTokenDialog({ open, ...form }: CreateJoinTokenDialogProps) {
  // The form mounts per opening, so each one starts empty and with its own idempotency key.
  return open ? <CreateJoinTokenForm {...form} /> : null;
}

function CreateJoinTokenForm({ tenant, pool, onClose, onCreated }: Omit<CreateJoinTokenDialogProps, 'open'>) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [values, setValues] = useState<JoinTokenFormValues>(INITIAL_JOIN_TOKEN_VALUES);
  // One key per opening of the dialog (the form mounts on open): a double submit, or a retry after a lost
  // answer, mints one token, and the second answer comes back without the secret.
  const [idempotencyKey] = useState(newIdempotencyKey);
  const isSubmitting = useRef(false);
  // The form's own findings, all at once; the server's (one at a time) show where these found nothing.
  const [localErrors, setLocalErrors] = useState<JoinTokenFieldErrors>({});
  const [labelsText, setLabelsText] = useState('');
  const [labelsError, setLabelsError] = useState<string | null>(null);

  const create = useMutation({
    mutationKey: trpc.joinTokens.create.mutationKey(),
    mutationFn: async (input: CreateJoinTokenInput) => {
      const { token, ...record } = await client.joinTokens.create.mutate(input);
      await queryClient.invalidateQueries(trpc.joinTokens.list.pathFilter());
      // The bearer token goes to the one-time panel and nowhere else: what the mutation cache keeps is the record.
      onCreated(record, token ?? null);
      return record;
    },
    onSettled: () => {
      isSubmitting.current = false;
    },
  });

  const apiError = create.error ? toApiError(create.error) : null;
  const errorField = apiError ? joinTokenFieldOf(apiError.field) : null;
  const errorFor = (field: JoinTokenFormField) =>
    localErrors[field] ?? (apiError && errorField === field ? joinTokenErrorMessage(apiError, 'create', tenant.name) : null);
  const isCustomTtl = values.ttlChoice === CUSTOM_TTL;

  function update<K extends keyof JoinTokenFormValues>(key: K, value: JoinTokenFormValues[K]) {
    setValues((current) => ({ ...current, [key]: value }));
    if (create.isError) create.reset();
    // Editing a field clears what was said about it; the rest stays until the next submit.
    if (Object.keys(localErrors).length) setLocalErrors({});
  }

  function validate() {
    const errors = validateJoinTokenForm(values);
    setLocalErrors(errors);
    const labels = labelsOfText(labelsText);
    setLabelsError('error' in labels ? labels.error : null);
    const isValid = !Object.keys(errors).length && !('error' in labels);
    if (!isValid) create.reset();
    return isValid;
  }

  function onSubmit() {
    // A ref, not isPending: two quick Enters land before React re-renders with the button disabled.
    if (isSubmitting.current) return;
    isSubmitting.current = true;
    create.mutate({
      ...toCreateJoinTokenInput({ tenantId: tenant.id, poolId: pool.id, idempotencyKey }, values),
      ...labelsInputOf(labelsText),
    });
  }

  return (
    <FormDialog
      open
      title="Create join token"
      description={
        <>
          For pool <strong>{pool.name}</strong>. The token is shown once, right after it is created.
        </>
      }
      submitLabel="Create token"
      pendingLabel="Creating…"
      isPending={create.isPending}
      error={apiError && !errorField ? joinTokenErrorMessage(apiError, 'create', tenant.name) : null}
      validate={validate}
      onSubmit={onSubmit}
      onClose={onClose}
    >
      <div className="form-grid">
        <Field label="Name" optional error={errorFor('name')} hint="What the token is for, as the list shows it.">
          {(control) => (
            <input
              {...control}
              type="text"
              maxLength={100}
              autoComplete="off"
              placeholder="rack B7 intake"
              value={values.name}
              onChange={(event) => update('name', event.target.value)}
            />
          )}
        </Field>
        <Field label="Description" optional error={errorFor('description')}>
          {(control) => (
            <input
              {...control}
              type="text"
              maxLength={500}
              autoComplete="off"
              value={values.description}
              onChange={(event) => update('description', event.target.value)}
            />
          )}
        </Field>
        <Field label="Lifetime" error={isCustomTtl ? null : errorFor('ttlSeconds')} hint="The token expires after this, used or not.">
          {(control) => (
            <select {...control} value={values.ttlChoice} onChange={(event) => update('ttlChoice', event.target.value)} data-autofocus>
              {TTL_PRESETS.map((preset) => (
                <option key={preset.seconds} value={String(preset.seconds)}>
                  {preset.label}
                </option>
              ))}
              <option value={CUSTOM_TTL}>Custom…</option>
            </select>
          )}
        </Field>
        <Field label="Max uses" error={errorFor('maxUses')} hint="How many machines may join with it, 1 to 10,000.">
          {(control) => (
            <input
              {...control}
              type="number"
              inputMode="numeric"
              min={1}
              max={10_000}
              step={1}
              required
              value={values.maxUses}
              onChange={(event) => update('maxUses', event.target.value)}
            />
          )}
        </Field>
        {isCustomTtl && (
          <Field label="Custom lifetime" error={errorFor('ttlSeconds')} hint="Like 1h30m, 90m or 24h (or seconds): one minute to one day.">
            {(control) => (
              <input
                {...control}
                type="text"
                required
                autoComplete="off"
                spellCheck={false}
                placeholder="1h30m"
                value={values.customTtl}
                onChange={(event) => update('customTtl', event.target.value)}
              />
            )}
          </Field>
        )}
      </div>

      <LabelsField
        value={labelsText}
        onChange={(text) => {
          setLabelsText(text);
          setLabelsError(null);
          if (create.isError) create.reset();
        }}
        error={labelsError}
        hint="Every node this token admits gets them (an approval rule, expected machine or approval overrides a key). Never on the certificate; they grant nothing."
      />

      <ChoiceGroup legend="Options">
        <Choice
          label="Allow reclaim"
          hint="Lets a machine the pool already knows, with a new key (say, after a reinstall), reclaim its node."
          error={errorFor('allowReclaim')}
          checked={values.allowReclaim}
          onChange={(checked) => update('allowReclaim', checked)}
        />
        <Choice
          label="Hosted on Kubernetes"
          hint="For bcd running as a DaemonSet. Its nodes join tenant-controlled unless the platform owns this pool and the pool is platform-operated."
          error={errorFor('hosted')}
          checked={values.isHosted}
          onChange={(checked) => update('isHosted', checked)}
        />
      </ChoiceGroup>

      <ChoiceGroup
        legend="Pin to one machine"
        optional
        hint="The machine must present every identifier named here. Leave all blank to admit whichever machine presents the token first."
        error={errorFor('expect')}
      >
        <div className="form-grid">
          {EXPECT_KEYS.map((key) => (
            <Field key={key} label={EXPECT_FIELDS[key].label} error={errorFor(`expect.${key}`)} hint={EXPECT_FIELDS[key].hint}>
              {(control) => (
                <input
                  {...control}
                  className="input-mono"
                  value={values.expect[key]}
                  onChange={(event) => update('expect', { ...values.expect, [key]: event.target.value })}
                  placeholder={EXPECT_FIELDS[key].placeholder}
                  autoComplete="off"
                  spellCheck={false}
                />
              )}
            </Field>
          ))}
        </div>
      </ChoiceGroup>
    </FormDialog>
  );
}
