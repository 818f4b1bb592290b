'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Field } from '@/components/ui/field';
import { FormDialog } from '@/components/ui/form-dialog';
import { fieldMessage, toApiError } from '@/lib/api-errors';
import type { Site } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';

interface CreateSiteDialogProps {
  open: boolean;
  tenantId: string;
  onClose: () => void;
  onCreated: (site: Site) => void;
}

/** Creates a site by name; its settings start at the defaults and are edited afterwards. */
export function CreateSiteDialog(props: CreateSiteDialogProps) {
  // The form mounts per opening, so each one starts empty.
  return props.open ? <CreateSiteForm {...props} /> : null;
}

function CreateSiteForm({ tenantId, onClose, onCreated }: CreateSiteDialogProps) {
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

  return (
    <FormDialog
      open
      title="Create site"
      description="A site is a place machines join from; pools live in it."
      submitLabel="Create site"
      pendingLabel="Creating…"
      isPending={create.isPending}
      error={apiError && apiError.field !== 'name' ? apiError.message : null}
      onSubmit={() => create.mutate({ tenantId, name: name.trim() })}
      onClose={onClose}
    >
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
    </FormDialog>
  );
}
