'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { fieldMessage, toApiError } from '@/lib/api-errors';
import type { Site } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';

/** Creates a site by name; its settings start at the defaults and are edited afterwards. */
export function CreateSiteDialog(props: { open: boolean; tenantId: string; onClose: () => void; onCreated: (site: Site) => void }) {
  return (
    <Dialog
      open={props.open}
      onClose={props.onClose}
      title="Create site"
      description="A site is a place machines join from; pools live in it."
    >
      <CreateSiteForm {...props} />
    </Dialog>
  );
}

function CreateSiteForm({ tenantId, onClose, onCreated }: { tenantId: string; onClose: () => void; onCreated: (site: Site) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const create = useMutation(
    trpc.sites.create.mutationOptions({
      onSuccess: async (site) => {
        await queryClient.invalidateQueries(trpc.sites.pathFilter());
        onCreated(site);
      },
    }),
  );
  const apiError = create.error ? toApiError(create.error) : null;

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    create.mutate({ tenantId, name: name.trim() });
  }

  return (
    <form onSubmit={onSubmit} className="form" aria-busy={create.isPending} noValidate>
      {apiError && apiError.field !== 'name' && (
        <p className="form-error" role="alert">
          {apiError.message}
        </p>
      )}
      <Field
        label="Name"
        error={apiError?.field === 'name' ? fieldMessage(apiError) : null}
        hint="Lower-case letters, digits and inner dashes; unique in the tenant."
      >
        {(control) => (
          <input
            {...control}
            value={name}
            onChange={(event) => {
              setName(event.target.value);
              if (create.isError) create.reset();
            }}
            required
            maxLength={63}
            autoComplete="off"
            spellCheck={false}
            placeholder="dc-east"
            data-autofocus
          />
        )}
      </Field>
      <footer className="dialog-footer">
        <button type="button" className="btn" onClick={onClose} disabled={create.isPending}>
          Cancel
        </button>
        <button type="submit" className="btn btn-primary" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create site'}
        </button>
      </footer>
    </form>
  );
}
