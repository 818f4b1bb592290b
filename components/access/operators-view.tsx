'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
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
import { InviteDialog, type CreatedInvitation } from './invite-dialog';
import { OneTimeSecretDialog } from './one-time-secret';
import { RoleSelect, type Role } from './roles';

const SIGN_IN_LABELS = { password: 'password', sso: 'single sign-on', 'password-and-sso': 'password or single sign-on' } as const;

/** Access › Operators: who belongs to the tenant, with which role, and who is invited. */
export function OperatorsView() {
  return <TenantGate>{(tenant) => <TenantOperators key={tenant.id} tenant={tenant} />}</TenantGate>;
}

function TenantOperators({ tenant }: { tenant: Tenant }) {
  const [isInviting, setInviting] = useState(false);
  const [created, setCreated] = useState<CreatedInvitation | null>(null);
  if (!can(tenant, 'compute:operators:read')) {
    return (
      <>
        <PageHeader title="Operators" />
        <div className="callout">
          Your role in <strong>{tenant.name}</strong> is {tenant.role}: only its admins see and manage its operators.
        </div>
      </>
    );
  }
  const canManage = can(tenant, 'compute:operators:manage');
  return (
    <>
      <PageHeader
        title="Operators"
        description={
          <>
            The people who sign in to tenant <strong>{tenant.name}</strong>, and their roles.
          </>
        }
        actions={
          canManage && (
            <button type="button" className="btn btn-primary" onClick={() => setInviting(true)}>
              Invite operator
            </button>
          )
        }
      />
      <OperatorTable tenant={tenant} canManage={canManage} />
      <InvitationTable tenant={tenant} canManage={canManage} />
      <InviteDialog
        open={isInviting}
        tenantId={tenant.id}
        tenantName={tenant.name}
        onClose={() => setInviting(false)}
        onCreated={(invitation) => {
          setInviting(false);
          setCreated(invitation);
        }}
      />
      <InvitationLinkDialog invitation={created} onDone={() => setCreated(null)} />
    </>
  );
}

export function InvitationLinkDialog({ invitation, onDone }: { invitation: CreatedInvitation | null; onDone: () => void }) {
  return (
    <OneTimeSecretDialog
      secret={invitation?.link ?? null}
      title="Invitation link"
      label="Invitation link"
      fileName="invitation-link.txt"
      onDone={onDone}
    >
      {invitation && (
        <>
          {invitation.emailed ? (
            <p>
              Sent to <strong>{invitation.email}</strong>. It makes them {invitation.role} and works once, until{' '}
              <LocalTime iso={invitation.expiresAt} />; the link is also shown here once.
            </p>
          ) : (
            <p>
              Send this link to <strong>{invitation.email}</strong> yourself (
              {invitation.emailError ? 'the mail could not be sent' : 'no mail is sent'}). It makes them {invitation.role} and works once,
              until <LocalTime iso={invitation.expiresAt} />.
            </p>
          )}
          {invitation.emailError && (
            <p className="form-error" role="alert">
              {invitation.emailError}
            </p>
          )}
        </>
      )}
    </OneTimeSecretDialog>
  );
}

type Operator = Outputs['operators']['list']['items'][number];
type Invitation = Outputs['invitations']['list']['items'][number];

function OperatorTable({ tenant, canManage }: { tenant: Tenant; canManage: boolean }) {
  const trpc = useTRPC();
  const operators = useQuery(trpc.operators.list.queryOptions({ tenantId: tenant.id }));
  return (
    <section className="panel" aria-labelledby="operators-heading">
      <header className="panel-header">
        <h2 id="operators-heading">Members</h2>
      </header>
      <DataList
        query={operators}
        loading="Loading operators…"
        what="the operators"
        empty="This tenant has no operators."
        label="Operators"
        rowKey={(op) => op.id}
        columns={[
          nameColumn<Operator>('Operator', (op) => (
            <>
              {op.name || op.email}
              {op.name && <span className="cell-sub">{op.email}</span>}
            </>
          )),
          {
            id: 'role',
            header: 'Role',
            cell: (op) => (canManage ? <RoleCell tenant={tenant} operatorId={op.id} who={op.name || op.email} role={op.role} /> : op.role),
          },
          {
            id: 'sign-in',
            header: 'Signs in with',
            cell: (op) => (
              <>
                {SIGN_IN_LABELS[op.signIn]}
                {op.source === 'sso' && <span className="cell-sub">role from the identity provider’s groups</span>}
              </>
            ),
          },
          {
            id: 'last',
            header: 'Last sign-in',
            cell: (op) => (op.lastSignInAt ? <LocalTime iso={op.lastSignInAt} /> : <span className="muted">never</span>),
          },
          ...(canManage
            ? [actionsColumn((op: Operator) => <RemoveOperatorButton tenant={tenant} operatorId={op.id} who={op.name || op.email} />)]
            : []),
        ]}
      />
    </section>
  );
}

function RoleCell({ tenant, operatorId, who, role }: { tenant: Tenant; operatorId: string; who: string; role: Role }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const setRole = useMutation(
    trpc.operators.setRole.mutationOptions({
      onSettled: () => queryClient.invalidateQueries(trpc.operators.list.pathFilter()),
      // The caller's own role may have changed: the tenant list carries it.
      onSuccess: () => queryClient.invalidateQueries(trpc.tenants.list.pathFilter()),
    }),
  );
  return (
    <>
      <RoleSelect
        aria-label={`Role of ${who}`}
        value={role}
        disabled={setRole.isPending}
        onChange={(next) => setRole.mutate({ tenantId: tenant.id, operatorId, role: next })}
      />
      {setRole.error && (
        <span className="field-error" role="alert">
          {toApiError(setRole.error).message}
        </span>
      )}
    </>
  );
}

function RemoveOperatorButton({ tenant, operatorId, who }: { tenant: Tenant; operatorId: string; who: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const remove = useMutation(
    trpc.operators.remove.mutationOptions({ onSuccess: () => queryClient.invalidateQueries(trpc.operators.list.pathFilter()) }),
  );
  return (
    <ConfirmButton
      label="Remove"
      ariaLabel={`Remove ${who}`}
      title={`Remove ${who}?`}
      confirmLabel="Remove operator"
      pendingLabel="Removing…"
      mutation={remove}
      errorMessage={(error) => toApiError(error).message}
      onConfirm={(close) => remove.mutate({ tenantId: tenant.id, operatorId }, { onSuccess: close })}
    >
      <p>
        <strong>{who}</strong> leaves tenant <strong>{tenant.name}</strong> and every console session of theirs ends at once. Invite them
        again to undo this.
      </p>
    </ConfirmButton>
  );
}

function InvitationTable({ tenant, canManage }: { tenant: Tenant; canManage: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const invitations = useQuery(trpc.invitations.list.queryOptions({ tenantId: tenant.id }));
  const revoke = useMutation(
    trpc.invitations.revoke.mutationOptions({ onSuccess: () => queryClient.invalidateQueries(trpc.invitations.list.pathFilter()) }),
  );
  return (
    <section className="panel" aria-labelledby="invitations-heading">
      <header className="panel-header">
        <h2 id="invitations-heading">Pending invitations</h2>
      </header>
      <DataList
        query={invitations}
        loading="Loading invitations…"
        what="the invitations"
        empty="No invitation is waiting."
        label="Invitations"
        rowKey={(inv) => inv.id}
        columns={[
          { id: 'email', header: 'Email', rowHeader: true, cell: (inv) => inv.email },
          { id: 'role', header: 'Role', cell: (inv) => inv.role },
          {
            id: 'invited-by',
            header: 'Invited by',
            title: (inv) => inv.createdBy,
            cell: (inv) => inv.createdByName ?? <code>{inv.createdBy}</code>,
          },
          { id: 'expires', header: 'Expires', cell: (inv) => <LocalTime iso={inv.expiresAt} /> },
          ...(canManage
            ? [
                actionsColumn((inv: Invitation) => (
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={`Revoke the invitation of ${inv.email}`}
                    title="Revoke the invitation?"
                    confirmLabel="Revoke invitation"
                    pendingLabel="Revoking…"
                    mutation={revoke}
                    errorMessage={(error) => toApiError(error).message}
                    onConfirm={(close) => revoke.mutate({ tenantId: tenant.id, invitationId: inv.id }, { onSuccess: close })}
                  >
                    <p>
                      The link sent to <strong>{inv.email}</strong> stops working at once.
                    </p>
                  </ConfirmButton>
                )),
              ]
            : []),
        ]}
      />
    </section>
  );
}
