'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Field } from '@/components/ui/field';
import { FormDialog } from '@/components/ui/form-dialog';
import { toApiError } from '@/lib/api-errors';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import type { Webhook } from './webhooks-view';

/** A dialog that creates a subscription (the secret goes to `onCreated`, never the cache) or edit one's URL, types and label. */
export function WebhookForm({
  tenantId,
  webhook,
  onClose,
  onCreated,
}: {
  tenantId: string;
  webhook: Webhook | null;
  onClose: () => void;
  onCreated: (secret: string, record: Webhook) => void;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const types = useQuery(trpc.webhooks.eventTypes.queryOptions({ tenantId }, { staleTime: Infinity }));
  const [url, setUrl] = useState(webhook?.url ?? '');
  const [description, setDescription] = useState(webhook?.description ?? '');
  const [chosen, setChosen] = useState<Set<string>>(new Set(webhook?.eventTypes ?? []));
  const save = useMutation({
    mutationFn: async () => {
      const eventTypes = [...chosen] as never;
      if (webhook) {
        await client.webhooks.update.mutate({
          tenantId,
          webhookId: webhook.id,
          url: url.trim(),
          description: description.trim(),
          eventTypes,
        });
      } else {
        const { secret, ...record } = await client.webhooks.create.mutate({
          tenantId,
          url: url.trim(),
          description: description.trim() || undefined,
          eventTypes,
        });
        onCreated(secret, record);
      }
      await queryClient.invalidateQueries(trpc.webhooks.list.pathFilter());
      if (webhook) onClose();
    },
  });
  const error = save.error ? toApiError(save.error) : null;
  const toggle = (type: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(type);
    else next.delete(type);
    setChosen(next);
    save.reset();
  };
  return (
    <FormDialog
      open
      title={webhook ? 'Edit webhook' : 'Create webhook'}
      description={webhook ? undefined : <>The signing secret is shown once, right after the webhook is created.</>}
      submitLabel={webhook ? 'Save changes' : 'Create webhook'}
      pendingLabel="Saving…"
      isPending={save.isPending}
      cannotSubmit={!url.trim() || chosen.size === 0}
      error={error && error.field !== 'url' ? error.message : null}
      onSubmit={() => save.mutate()}
      onClose={onClose}
    >
      <Field
        label="URL"
        error={error?.field === 'url' ? error.message : null}
        hint="The receiver, https:// (http:// only inside a trusted network). It is signed per Standard Webhooks."
      >
        {(control) => (
          <input
            {...control}
            type="url"
            inputMode="url"
            value={url}
            maxLength={2048}
            data-autofocus
            onChange={(event) => {
              setUrl(event.target.value);
              save.reset();
            }}
          />
        )}
      </Field>
      <Field label="Description" optional>
        {(control) => <input {...control} value={description} maxLength={200} onChange={(event) => setDescription(event.target.value)} />}
      </Field>
      <fieldset className="field">
        <legend>Event types</legend>
        {types.isPending && <p className="muted">Loading event types…</p>}
        {types.isError && (
          <p className="form-error" role="alert">
            Could not load the event types.
          </p>
        )}
        <div className="checkbox-list">
          {(types.data?.items ?? []).map((type) => (
            <label key={type} className="checkbox">
              <input type="checkbox" checked={chosen.has(type)} onChange={(event) => toggle(type, event.target.checked)} />{' '}
              <code>{type}</code>
            </label>
          ))}
        </div>
      </fieldset>
    </FormDialog>
  );
}
