'use client';

import { useMutation } from '@tanstack/react-query';
import { signIn } from 'next-auth/react';
import { useState, type FormEvent } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { ConfirmDialog } from '@/components/ui/confirm-dialog';
import { toApiError } from '@/lib/api-errors';
import { markSigningOut } from '@/lib/login-url';
import { useTRPCClient } from '@/lib/trpc';
import { MIN_PASSWORD_LENGTH, newPasswordErrors, type NewPasswordField } from '@/components/auth/new-password-errors';
import { NewPasswordFields } from '@/components/auth/new-password-fields';

/** The signed-in operator's own account: a new password, and ending every session. */
export function AccountView({ email, name, hasPassword }: { email: string; name: string | null; hasPassword: boolean }) {
  return (
    <>
      <PageHeader
        title="Account"
        description={
          <>
            Signed in as <strong>{name ? `${name} (${email})` : email}</strong>.
          </>
        }
      />
      {hasPassword ? (
        <ChangePasswordPanel email={email} />
      ) : (
        <section className="panel" aria-label="Password">
          <p className="panel-body">You sign in through your identity provider; this account has no password to change.</p>
        </section>
      )}
      <SignOutEverywherePanel />
    </>
  );
}

function ChangePasswordPanel({ email }: { email: string }) {
  const client = useTRPCClient();
  // Every field's problem at once; `form` is what is not about one field.
  const [errors, setErrors] = useState<Partial<Record<NewPasswordField | 'form', string>>>({});
  const change = useMutation({
    mutationFn: async ({ currentPassword, newPassword }: { currentPassword: string; newPassword: string }) => {
      await client.account.changePassword.mutate({ currentPassword, newPassword });
      // The change ends every session, this one too: sign in again with the new password.
      const result = await signIn('credentials', { email, password: newPassword, redirect: false });
      window.location.assign(result?.ok && !result.error ? '/account?changed=1' : '/login');
    },
    onError: (cause) => {
      const api = toApiError(cause);
      setErrors(
        api.field === 'currentPassword'
          ? { current: 'That is not your current password.' }
          : api.field === 'newPassword'
            ? { new: api.message.replace(/^newPassword: /, '') }
            : { form: api.message },
      );
    },
  });
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const currentPassword = String(form.get('currentPassword') ?? '');
    const newPassword = String(form.get('newPassword') ?? '');
    const found = newPasswordErrors({ current: currentPassword, newPassword, repeat: String(form.get('repeatPassword') ?? '') });
    setErrors(found);
    if (Object.keys(found).length === 0) change.mutate({ currentPassword, newPassword });
  }
  return (
    <section className="panel" aria-labelledby="password-heading">
      <header className="panel-header">
        <h2 id="password-heading">Change password</h2>
      </header>
      <form className="form panel-body" onSubmit={onSubmit} aria-busy={change.isPending} noValidate>
        <NewPasswordFields
          email={email}
          currentLabel="Current password"
          newHint={`At least ${MIN_PASSWORD_LENGTH} characters. Every session of yours ends; this browser signs in again.`}
          errors={errors}
        />
        <div>
          <button type="submit" className="btn btn-primary" disabled={change.isPending}>
            {change.isPending ? 'Saving…' : 'Change password'}
          </button>
        </div>
      </form>
    </section>
  );
}

function SignOutEverywherePanel() {
  const client = useTRPCClient();
  const [isConfirming, setConfirming] = useState(false);
  const signOutAll = useMutation({
    mutationFn: () => client.account.signOutEverywhere.mutate({}),
    onSuccess: () => {
      markSigningOut();
      window.location.assign('/login');
    },
  });
  return (
    <section className="panel" aria-labelledby="sessions-heading">
      <header className="panel-header">
        <h2 id="sessions-heading">Sessions</h2>
      </header>
      <div className="panel-body">
        <p>Signs you out of the console in every browser, on every instance, this one included.</p>
        <button type="button" className="btn btn-danger" onClick={() => setConfirming(true)}>
          Sign out of every session
        </button>
      </div>
      <ConfirmDialog
        open={isConfirming}
        title="Sign out of every session?"
        confirmLabel="Sign out everywhere"
        pendingLabel="Signing out…"
        isPending={signOutAll.isPending}
        error={signOutAll.error ? toApiError(signOutAll.error).message : null}
        onConfirm={() => signOutAll.mutate()}
        onClose={() => {
          signOutAll.reset();
          setConfirming(false);
        }}
      >
        <p>Every console session of yours ends at once, including this one. API keys are not affected.</p>
      </ConfirmDialog>
    </section>
  );
}
