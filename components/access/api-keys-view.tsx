'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { FormDialog } from '@/components/ui/form-dialog';
import { Field } from '@/components/ui/field';
import { actionsColumn, nameColumn } from '@/components/ui/data-columns';
import { DataList, type DataColumn } from '@/components/ui/data-table';
import { LocalTime } from '@/components/ui/time';
import { toApiError } from '@/lib/api-errors';
import type { Outputs, Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import { OneTimeSecretDialog } from './one-time-secret';
import { ROLE_HINTS, RoleSelect, type Role } from './roles';

/** The expiry choices of a new key; the server takes 1 hour to 400 days, or none. */
const EXPIRY_CHOICES = [
  { label: 'Never (until revoked)', seconds: null },
  { label: '1 day', seconds: 86_400 },
  { label: '30 days', seconds: 30 * 86_400 },
  { label: '90 days', seconds: 90 * 86_400 },
  { label: '365 days', seconds: 365 * 86_400 },
] as const;

/** Access › API keys: the tenant's keys for scripts and the CLI. */
type ApiKey = Outputs['apiKeys']['list']['items'][number];

export function ApiKeysView() {
  return <TenantGate>{(tenant) => <TenantApiKeys key={tenant.id} tenant={tenant} />}</TenantGate>;
}

function TenantApiKeys({ tenant }: { tenant: Tenant }) {
  const [isCreating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ key: string; name: string; role: Role } | null>(null);
  if (!can(tenant, 'compute:api-keys:read')) {
    return (
      <>
        <PageHeader title="API keys" />
        <div className="callout">
          Your role in <strong>{tenant.name}</strong> does not show API keys.
        </div>
      </>
    );
  }
  const canManage = can(tenant, 'compute:api-keys:manage');
  return (
    <>
      <PageHeader
        title="API keys"
        description={
          <>
            Bearer keys of tenant <strong>{tenant.name}</strong> for the REST API and the CLI, each with a role.
          </>
        }
        actions={
          canManage && (
            <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
              Create API key
            </button>
          )
        }
      />
      <ApiKeyTable tenant={tenant} canManage={canManage} />
      {isCreating && (
        <CreateApiKeyDialog
          tenant={tenant}
          onClose={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setCreated(key);
          }}
        />
      )}
      <OneTimeSecretDialog
        secret={created?.key ?? null}
        title="New API key"
        label="API key"
        fileName="api-key"
        onDone={() => setCreated(null)}
      >
        {created && (
          <p>
            <strong>{created.name}</strong> acts as {created.role} in {tenant.name}: send it as <code>Authorization: Bearer …</code>.
          </p>
        )}
      </OneTimeSecretDialog>
    </>
  );
}

/** Names a new key, its role and lifetime; it mounts per opening, so each one starts empty. */
function CreateApiKeyDialog({
  tenant,
  onClose,
  onCreated,
}: {
  tenant: Tenant;
  onClose: () => void;
  onCreated: (key: { key: string; name: string; role: Role }) => void;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [expiry, setExpiry] = useState(0);
  const create = useMutation({
    mutationKey: trpc.apiKeys.create.mutationKey(),
    mutationFn: async () => {
      const ttlSeconds = EXPIRY_CHOICES[expiry]!.seconds;
      const { key, ...record } = await client.apiKeys.create.mutate({
        tenantId: tenant.id,
        name: name.trim(),
        role,
        ...(ttlSeconds ? { ttlSeconds } : {}),
      });
      await queryClient.invalidateQueries(trpc.apiKeys.list.pathFilter());
      // The key goes to the one-time dialog only: the mutation cache keeps the record.
      onCreated({ key, name: record.name, role: record.role });
      return record;
    },
  });
  const error = create.error ? toApiError(create.error) : null;
  return (
    <FormDialog
      open
      title="Create API key"
      description={
        <>
          For tenant <strong>{tenant.name}</strong>. The key is shown once, right after it is created.
        </>
      }
      submitLabel="Create key"
      pendingLabel="Creating…"
      isPending={create.isPending}
      cannotSubmit={!name.trim()}
      error={error && error.field !== 'name' ? error.message : null}
      onSubmit={() => create.mutate()}
      onClose={onClose}
    >
      <Field label="Name" error={error?.field === 'name' ? error.message : null} hint="What uses the key, e.g. “ci-deploy”.">
        {(control) => (
          <input
            {...control}
            value={name}
            maxLength={100}
            data-autofocus
            onChange={(event) => {
              setName(event.target.value);
              create.reset();
            }}
          />
        )}
      </Field>
      <Field label="Role" hint={ROLE_HINTS[role]}>
        {(control) => <RoleSelect {...control} value={role} onChange={setRole} />}
      </Field>
      <Field label="Expires">
        {(control) => (
          <select {...control} value={expiry} onChange={(event) => setExpiry(Number(event.target.value))}>
            {EXPIRY_CHOICES.map((choice, index) => (
              <option key={choice.label} value={index}>
                {choice.label}
              </option>
            ))}
          </select>
        )}
      </Field>
    </FormDialog>
  );
}

function ApiKeyTable({ tenant, canManage }: { tenant: Tenant; canManage: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.apiKeys.list.queryOptions({ tenantId: tenant.id }));
  const revoke = useMutation(
    trpc.apiKeys.revoke.mutationOptions({ onSuccess: () => queryClient.invalidateQueries(trpc.apiKeys.list.pathFilter()) }),
  );
  const revokeColumn: DataColumn<ApiKey> = actionsColumn((key) => (
    <ConfirmButton
      label="Revoke"
      ariaLabel={`Revoke API key ${key.name}`}
      title={`Revoke API key ${key.name}?`}
      confirmLabel="Revoke key"
      pendingLabel="Revoking…"
      mutation={revoke}
      errorMessage={(error) => toApiError(error).message}
      onConfirm={(close) => revoke.mutate({ tenantId: tenant.id, apiKeyId: key.id }, { onSuccess: close })}
    >
      <p>
        Everything that uses <strong>{key.name}</strong> is refused from now on. This cannot be undone.
      </p>
    </ConfirmButton>
  ));
  return (
    <section className="panel" aria-label="API keys">
      <DataList
        query={keys}
        loading="Loading API keys…"
        what="the API keys"
        empty="This tenant has no API keys."
        label="API keys table"
        rowKey={(key) => key.id}
        columns={[
          nameColumn<ApiKey>('Name', (key) => (
            <>
              {key.name}
              <span className="cell-sub">
                <code>{key.id}</code>
              </span>
            </>
          )),
          { id: 'role', header: 'Role', cell: (key) => key.role },
          {
            id: 'created',
            header: 'Created by',
            title: (key) => key.createdBy,
            cell: (key) => (
              <>
                {key.createdByName ?? <code>{key.createdBy}</code>}
                <span className="cell-sub">
                  <LocalTime iso={key.createdAt} />
                </span>
              </>
            ),
          },
          {
            id: 'used',
            header: 'Last used',
            cell: (key) => (key.lastUsedAt ? <LocalTime iso={key.lastUsedAt} /> : <span className="muted">never</span>),
          },
          {
            id: 'expires',
            header: 'Expires',
            cell: (key) => (key.expiresAt ? <LocalTime iso={key.expiresAt} /> : <span className="muted">never</span>),
          },
          ...(canManage ? [revokeColumn] : []),
        ]}
      />
    </section>
  );
}
