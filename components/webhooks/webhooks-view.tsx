'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { OneTimeSecretDialog } from '@/components/access/one-time-secret';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { actionsColumn, nameColumn } from '@/components/ui/data-columns';
import { DataList } from '@/components/ui/data-table';
import { LocalTime } from '@/components/ui/time';
import { toApiError } from '@/lib/api-errors';
import type { Outputs, Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { useTRPC } from '@/lib/trpc';
import { WebhookDeliveries } from './webhook-deliveries';
import { WebhookForm } from './webhook-form';

export type Webhook = Outputs['webhooks']['list']['items'][number];

/** Webhooks: the tenant's signed webhook subscriptions and their deliveries (admins). */
export function WebhooksView() {
  return <TenantGate>{(tenant) => <TenantWebhooks key={tenant.id} tenant={tenant} />}</TenantGate>;
}

function TenantWebhooks({ tenant }: { tenant: Tenant }) {
  const [editing, setEditing] = useState<Webhook | 'new' | null>(null);
  const [secret, setSecret] = useState<{ secret: string; url: string; rotated: boolean } | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  if (!can(tenant, 'compute:webhooks:read')) {
    return (
      <>
        <PageHeader title="Webhooks" />
        <div className="callout">
          Webhooks of <strong>{tenant.name}</strong> are for its admins.
        </div>
      </>
    );
  }
  return (
    <>
      <PageHeader
        title="Webhooks"
        description={
          <>
            Signed HTTP callbacks (Standard Webhooks) for the events of tenant <strong>{tenant.name}</strong>: join requests, joins,
            refusals, revoked certificates and more.
          </>
        }
        actions={
          <button type="button" className="btn btn-primary" onClick={() => setEditing('new')}>
            Create webhook
          </button>
        }
      />
      <WebhookTable
        tenant={tenant}
        shown={shown}
        onShow={setShown}
        onEdit={setEditing}
        onSecret={(s, url) => setSecret({ secret: s, url, rotated: true })}
      />
      {shown && <WebhookDeliveries tenantId={tenant.id} webhookId={shown} />}
      {editing !== null && (
        <WebhookForm
          key={editing === 'new' ? 'new' : editing.id}
          tenantId={tenant.id}
          webhook={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onCreated={(s, record) => {
            setEditing(null);
            setSecret({ secret: s, url: record.url, rotated: false });
            setShown(record.id);
          }}
        />
      )}
      <OneTimeSecretDialog
        secret={secret?.secret ?? null}
        title={secret?.rotated ? 'New signing secret' : 'New webhook'}
        label="Signing secret"
        fileName="webhook-secret"
        onDone={() => setSecret(null)}
      >
        {secret && (
          <p>
            Deliveries to <code>{secret.url}</code> are signed with this secret: verify <code>webhook-signature</code> with it (see the
            operator guide).
          </p>
        )}
      </OneTimeSecretDialog>
    </>
  );
}

function WebhookTable({
  tenant,
  shown,
  onShow,
  onEdit,
  onSecret,
}: {
  tenant: Tenant;
  shown: string | null;
  onShow: (id: string | null) => void;
  onEdit: (w: Webhook) => void;
  onSecret: (secret: string, url: string) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.webhooks.list.queryOptions({ tenantId: tenant.id }));
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries(trpc.webhooks.list.pathFilter()),
      queryClient.invalidateQueries(trpc.webhooks.deliveries.pathFilter()),
    ]);
  const update = useMutation(trpc.webhooks.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.webhooks.delete.mutationOptions({ onSuccess: refresh }));
  const test = useMutation(trpc.webhooks.test.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.webhooks.rotateSecret.mutationOptions({ onSuccess: refresh }));
  const failure = update.error ?? test.error;
  return (
    <section className="panel" aria-label="Webhook subscriptions">
      {failure && (
        <p className="form-error" role="alert">
          {toApiError(failure).message}
        </p>
      )}
      <DataList
        query={list}
        loading="Loading webhooks…"
        what="the webhooks"
        empty="This tenant has no webhooks."
        label="Webhooks"
        rowKey={(w) => w.id}
        rowProps={(w) => ({ 'aria-selected': shown === w.id })}
        columns={[
          nameColumn<Webhook>('URL', (w) => (
            <>
              <code>{w.url}</code>
              <span className="cell-sub">
                {w.description && <>{w.description} · </>}
                <code>{w.id}</code> · <LocalTime iso={w.createdAt} />
              </span>
            </>
          )),
          {
            id: 'types',
            header: 'Event types',
            cell: (w) =>
              w.eventTypes.map((t) => (
                <code key={t} className="cell-sub">
                  {t}
                </code>
              )),
          },
          {
            id: 'state',
            header: 'State',
            cell: (w) => (
              <>
                {w.enabled ? 'Enabled' : 'Disabled'}
                {w.disabledReason && <span className="cell-sub">{w.disabledReason}</span>}
                {w.enabled && w.consecutiveFailures > 0 && (
                  <span className="cell-sub">{w.consecutiveFailures} failed attempts in a row</span>
                )}
              </>
            ),
          },
          actionsColumn<Webhook>((w) => (
            <>
              <button
                type="button"
                className="btn btn-small"
                aria-label={`Deliveries of ${w.url}`}
                aria-pressed={shown === w.id}
                onClick={() => onShow(shown === w.id ? null : w.id)}
              >
                Deliveries
              </button>
              <button
                type="button"
                className="btn btn-small"
                aria-label={`Send a test event to ${w.url}`}
                disabled={!w.enabled || test.isPending}
                onClick={() => test.mutate({ tenantId: tenant.id, webhookId: w.id }, { onSuccess: () => onShow(w.id) })}
              >
                Send test
              </button>
              <button type="button" className="btn btn-small" aria-label={`Edit ${w.url}`} onClick={() => onEdit(w)}>
                Edit
              </button>
              <button
                type="button"
                className="btn btn-small"
                aria-label={`${w.enabled ? 'Disable' : 'Enable'} ${w.url}`}
                disabled={update.isPending}
                onClick={() => update.mutate({ tenantId: tenant.id, webhookId: w.id, enabled: !w.enabled })}
              >
                {w.enabled ? 'Disable' : 'Enable'}
              </button>
              <ConfirmButton
                label="Rotate secret"
                ariaLabel={`Rotate the signing secret of ${w.url}`}
                title="Rotate the signing secret?"
                confirmLabel="Rotate secret"
                pendingLabel="Rotating…"
                mutation={rotate}
                errorMessage={(error) => toApiError(error).message}
                onConfirm={(close) =>
                  rotate.mutate(
                    { tenantId: tenant.id, webhookId: w.id },
                    {
                      onSuccess: (r) => {
                        close();
                        onSecret(r.secret, r.url);
                      },
                    },
                  )
                }
              >
                <p>Deliveries are signed with a new secret from now on; the receiver must be given it.</p>
              </ConfirmButton>
              <ConfirmButton
                label="Delete"
                ariaLabel={`Delete the webhook ${w.url}`}
                title="Delete this webhook?"
                confirmLabel="Delete webhook"
                pendingLabel="Deleting…"
                mutation={remove}
                errorMessage={(error) => toApiError(error).message}
                onConfirm={(close) =>
                  remove.mutate(
                    { tenantId: tenant.id, webhookId: w.id },
                    {
                      onSuccess: () => {
                        close();
                        if (shown === w.id) onShow(null);
                      },
                    },
                  )
                }
              >
                <p>
                  <code>{w.url}</code> gets no further deliveries; its delivery history is deleted with it.
                </p>
              </ConfirmButton>
            </>
          )),
        ]}
      />
    </section>
  );
}
