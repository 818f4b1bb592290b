'use client';

import { TRPCClientError } from '@trpc/client';
import { signIn, signOut } from 'next-auth/react';
import { useState, type FormEvent } from 'react';
import { markSigningOut } from '@/lib/login-url';
import { useTRPCClient } from '@/lib/trpc';
import { MIN_PASSWORD_LENGTH, newPasswordErrors, type NewPasswordField } from './new-password-errors';
import { NewPasswordFields } from './new-password-fields';

/**
 * The one-time password's only use: set a new one. The change ends every session of the operator (this one
 * too), so the form signs in again with the new password and then opens the console.
 */
export function ChoosePasswordForm({ email }: { email: string }) {
  const client = useTRPCClient();
  // Every field's problem at once; `form` is what is not about one field (the server unreachable, say).
  const [errors, setErrors] = useState<Partial<Record<NewPasswordField | 'form', string>>>({});
  const [isPending, setPending] = useState(false);

  // Handles its own failures (shown on the form); the form's handler starts it and does not wait.
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const currentPassword = String(form.get('currentPassword') ?? '');
    const newPassword = String(form.get('newPassword') ?? '');
    const found = newPasswordErrors({ current: currentPassword, newPassword, repeat: String(form.get('repeatPassword') ?? '') });
    if (found.current) found.current = 'Give the one-time password you signed in with.';
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    setPending(true);
    try {
      await client.account.changePassword.mutate({ currentPassword, newPassword });
    } catch (cause) {
      const field = cause instanceof TRPCClientError ? (cause.data as { field?: string } | undefined)?.field : undefined;
      const text = cause instanceof Error ? cause.message.replace(/^\w+: /, '') : 'Could not change the password.';
      setErrors(
        field === 'currentPassword'
          ? { current: 'That is not the one-time password you signed in with.' }
          : field === 'newPassword'
            ? { new: text }
            : { form: text },
      );
      setPending(false);
      return;
    }
    const result = await signIn('credentials', { email, password: newPassword, redirect: false });
    // A full load, so the server renders the console with the new session cookie.
    window.location.assign(result?.ok && !result.error ? '/' : '/login');
  }

  return (
    <form className="login-form" onSubmit={(event) => void onSubmit(event)} noValidate>
      <NewPasswordFields
        email={email}
        currentLabel="One-time password"
        newHint={`At least ${MIN_PASSWORD_LENGTH} characters.`}
        errors={errors}
        isRequired
      />
      <button type="submit" className="btn btn-primary btn-block" disabled={isPending}>
        {isPending ? 'Saving…' : 'Set the new password'}
      </button>
      <button
        type="button"
        className="btn btn-block"
        onClick={() =>
          // Fire-and-forget: the page is left either way (a failed sign-out still lands on /login's own check).
          void (async () => {
            markSigningOut();
            await signOut({ redirect: false });
            window.location.assign('/login');
          })()
        }
      >
        Sign out
      </button>
    </form>
  );
}
