'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { FormDialog } from '@/components/ui/form-dialog';
import { Field } from '@/components/ui/field';
import { toApiError } from '@/lib/api-errors';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import { ROLE_HINTS, RoleSelect, type Role } from './roles';

export interface CreatedInvitation {
  email: string;
  role: Role;
  expiresAt: string;
  /** `https://console…/invite#bcinv_…`: the token rides in the fragment, which browsers never send to a server. */
  link: string;
  /** The server mailed the link to `email` (BETTER_COMPUTE_SMTP_URL is set and the send went through). */
  emailed: boolean;
  /** Why the mail was not sent, when a send was tried; the invitation exists regardless. */
  emailError: string | null;
}

/** Invites a person by email with a role in `tenantId`; the one-time link goes to `onCreated`, nowhere else. */
export function InviteDialog({
  open,
  tenantId,
  tenantName,
  fixedRole,
  onClose,
  onCreated,
}: {
  open: boolean;
  tenantId: string;
  tenantName: string;
  /** The first admin of a new tenant: the role is not a choice. */
  fixedRole?: Role;
  onClose: () => void;
  onCreated: (invitation: CreatedInvitation) => void;
}) {
  // The form mounts per opening, so each one starts empty.
  if (!open) return null;
  return <InviteForm tenantId={tenantId} tenantName={tenantName} fixedRole={fixedRole} onClose={onClose} onCreated={onCreated} />;
}

function InviteForm({
  tenantId,
  tenantName,
  fixedRole,
  onClose,
  onCreated,
}: {
  tenantId: string;
  tenantName: string;
  fixedRole?: Role;
  onClose: () => void;
  onCreated: (invitation: CreatedInvitation) => void;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>(fixedRole ?? 'viewer');
  const invite = useMutation({
    mutationKey: trpc.invitations.create.mutationKey(),
    // `replacePending`: the person confirmed replacing the email's pending invitation with a new link.
    mutationFn: async ({ replacePending }: { replacePending: boolean }) => {
      const { token, ...record } = await client.invitations.create.mutate({
        tenantId,
        email: email.trim(),
        role,
        ...(replacePending ? { replacePending } : {}),
      });
      await queryClient.invalidateQueries(trpc.invitations.list.pathFilter());
      onCreated({
        email: record.email,
        role: record.role,
        expiresAt: record.expiresAt,
        link: `${window.location.origin}/invite#${token}`,
        emailed: record.emailed,
        emailError: record.emailError,
      });
      return record;
    },
  });
  const error = invite.error ? toApiError(invite.error) : null;
  // The email already has a pending invitation: say so, and offer to replace it rather than making a second link.
  const isPendingAlready = error?.domainCode === 'CONFLICT' && error.field === 'email';
  return (
    <FormDialog
      open
      title={fixedRole ? `Invite the first admin of ${tenantName}` : 'Invite an operator'}
      description={
        <>
          To tenant <strong>{tenantName}</strong>. The link is shown once and works for 7 days.
        </>
      }
      submitLabel={isPendingAlready ? 'Revoke the old link and invite again' : 'Create invitation link'}
      pendingLabel="Inviting…"
      isPending={invite.isPending}
      cannotSubmit={!email.trim()}
      error={error && error.field !== 'email' ? error.message : null}
      onSubmit={() => invite.mutate({ replacePending: isPendingAlready })}
      onClose={onClose}
    >
      <Field
        label="Email"
        error={error?.field === 'email' ? error.message : null}
        hint="The person signs in with this address (a password, or single sign-on with the same verified email)."
      >
        {(control) => (
          <input
            {...control}
            type="email"
            autoComplete="off"
            value={email}
            data-autofocus
            onChange={(event) => {
              setEmail(event.target.value);
              invite.reset();
            }}
            required
          />
        )}
      </Field>
      {!fixedRole && (
        <Field label="Role" hint={ROLE_HINTS[role]}>
          {(control) => (
            <RoleSelect
              {...control}
              value={role}
              onChange={(next) => {
                setRole(next);
                invite.reset();
              }}
            />
          )}
        </Field>
      )}
    </FormDialog>
  );
}
