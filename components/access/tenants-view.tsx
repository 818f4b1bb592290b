'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { FormDialog } from '@/components/ui/form-dialog';
import { Field } from '@/components/ui/field';
import { actionsColumn, nameColumn } from '@/components/ui/data-columns';
import { DataList } from '@/components/ui/data-table';
import { LocalTime } from '@/components/ui/time';
import { toApiError } from '@/lib/api-errors';
import type { Tenant } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';
import { InviteDialog, type CreatedInvitation } from './invite-dialog';
import { InvitationLinkDialog } from './operators-view';

/** Whether the caller administers the root tenant: only they create tenants and invite a tenant's first admin. */
const isRootAdmin = (tenants: readonly Tenant[]) => tenants.some((t) => t.isRoot && t.role === 'admin');

/** Access › Tenants, for root admins: every tenant, a new one, and a new tenant's first admin. */
export function TenantsView() {
  const trpc = useTRPC();
  const tenants = useQuery(trpc.tenants.list.queryOptions({}, { staleTime: 60_000 }));
  const [isCreating, setCreating] = useState(false);
  const [invitingTo, setInvitingTo] = useState<Tenant | null>(null);
  const [created, setCreated] = useState<CreatedInvitation | null>(null);
  const items = tenants.data?.items ?? [];
  if (tenants.isSuccess && !isRootAdmin(items)) {
    return (
      <>
        <PageHeader title="Tenants" />
        <div className="callout">Only admins of the root tenant create and list tenants.</div>
      </>
    );
  }
  return (
    <>
      <PageHeader
        title="Tenants"
        description="Each tenant has its own sites, pools, nodes and operators. Its admins act in it; root admins create it and invite its first admin."
        actions={
          tenants.isSuccess && (
            <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
              Create tenant
            </button>
          )
        }
      />
      <section className="panel" aria-label="Tenants">
        <DataList
          query={tenants}
          rows={items}
          loading="Loading tenants…"
          what="the tenants"
          empty="No tenants yet."
          label="Tenants table"
          rowKey={(t) => t.id}
          columns={[
            nameColumn<(typeof items)[number]>('Name', (t) => (
              <>
                {t.name}
                {t.isRoot && <span className="cell-sub">root tenant</span>}
              </>
            )),
            { id: 'role', header: 'Your role', cell: (t) => t.role ?? <span className="muted">not a member</span> },
            { id: 'created', header: 'Created', cell: (t) => <LocalTime iso={t.createdAt} /> },
            actionsColumn<(typeof items)[number]>(
              (t) =>
                !t.isRoot && (
                  <button
                    type="button"
                    className="btn btn-small btn-quiet"
                    aria-label={`Invite first admin of ${t.name}`}
                    onClick={() => setInvitingTo(t)}
                  >
                    Invite first admin
                  </button>
                ),
            ),
          ]}
        />
      </section>
      {isCreating && <CreateTenantDialog onClose={() => setCreating(false)} />}
      {invitingTo && (
        <InviteDialog
          open
          tenantId={invitingTo.id}
          tenantName={invitingTo.name}
          fixedRole="admin"
          onClose={() => setInvitingTo(null)}
          onCreated={(invitation) => {
            setInvitingTo(null);
            setCreated(invitation);
          }}
        />
      )}
      <InvitationLinkDialog invitation={created} onDone={() => setCreated(null)} />
    </>
  );
}

/** Creates a tenant by name; it mounts per opening, so each one starts empty. */
function CreateTenantDialog({ onClose }: { onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const create = useMutation(
    trpc.tenants.create.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries(trpc.tenants.list.pathFilter());
        onClose();
      },
    }),
  );
  const error = create.error ? toApiError(create.error) : null;
  return (
    <FormDialog
      open
      title="Create tenant"
      size="small"
      submitLabel="Create tenant"
      pendingLabel="Creating…"
      isPending={create.isPending}
      cannotSubmit={!name.trim()}
      error={error && error.field !== 'name' ? error.message : null}
      onSubmit={() => create.mutate({ name: name.trim() })}
      onClose={onClose}
    >
      <Field
        label="Name"
        error={error?.field === 'name' ? error.message : null}
        hint="Lower-case letters, digits and dashes, e.g. “team-ml”."
      >
        {(control) => (
          <input
            {...control}
            value={name}
            data-autofocus
            onChange={(event) => {
              setName(event.target.value);
              create.reset();
            }}
          />
        )}
      </Field>
    </FormDialog>
  );
}
