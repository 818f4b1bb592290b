'use client';

import { TRPCClientError } from '@trpc/client';
import { signIn, signOut } from 'next-auth/react';
import { useState, type FormEvent } from 'react';
import { markSigningOut } from '@/lib/login-url';
import { useTRPCClient } from '@/lib/trpc';

const MIN_LENGTH = 12;

/**
 * The one-time password's only use: set a new one. The change ends every session of the operator (this one
 * too), so the form signs in again with the new password and then opens the console.
 */
export function ChoosePasswordForm({ email }: { email: string }) {
  const client = useTRPCClient();
  const [error, setError] = useState<{ field: 'current' | 'new' | 'repeat' | null; text: string } | null>(null);
  const [isPending, setPending] = useState(false);

  // Handles its own failures (shown on the form); the form's handler starts it and does not wait.
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const currentPassword = String(form.get('currentPassword') ?? '');
    const newPassword = String(form.get('newPassword') ?? '');
    if (newPassword.length < MIN_LENGTH) return setError({ field: 'new', text: `Use at least ${MIN_LENGTH} characters.` });
    if (newPassword !== String(form.get('repeatPassword') ?? ''))
      return setError({ field: 'repeat', text: 'The two new passwords differ.' });
    setPending(true);
    setError(null);
    try {
      await client.account.changePassword.mutate({ currentPassword, newPassword });
    } catch (cause) {
      const field = cause instanceof TRPCClientError ? (cause.data as { field?: string } | undefined)?.field : undefined;
      setError({
        field: field === 'currentPassword' ? 'current' : field === 'newPassword' ? 'new' : null,
        text:
          field === 'currentPassword'
            ? 'That is not the one-time password you signed in with.'
            : cause instanceof Error
              ? cause.message
              : 'Could not change the password.',
      });
      setPending(false);
      return;
    }
    const result = await signIn('credentials', { email, password: newPassword, redirect: false });
    // A full load, so the server renders the console with the new session cookie.
    window.location.assign(result?.ok && !result.error ? '/' : '/login');
  }

  const invalid = (field: 'current' | 'new' | 'repeat') => (error?.field === field ? true : undefined);
  return (
    <form className="login-form" onSubmit={(event) => void onSubmit(event)} noValidate>
      {error && (
        <p className="form-error" role="alert">
          {error.text}
        </p>
      )}
      <input type="hidden" name="username" autoComplete="username" value={email} readOnly />
      <div className="field">
        <label htmlFor="current-password" className="field-label">
          One-time password
        </label>
        <input
          id="current-password"
          name="currentPassword"
          type="password"
          autoComplete="current-password"
          required
          autoFocus
          aria-invalid={invalid('current')}
        />
      </div>
      <div className="field">
        <label htmlFor="new-password" className="field-label">
          New password
        </label>
        <input
          id="new-password"
          name="newPassword"
          type="password"
          autoComplete="new-password"
          required
          minLength={MIN_LENGTH}
          aria-invalid={invalid('new')}
          aria-describedby="new-password-hint"
        />
        <span id="new-password-hint" className="field-hint">
          At least {MIN_LENGTH} characters.
        </span>
      </div>
      <div className="field">
        <label htmlFor="repeat-password" className="field-label">
          Repeat the new password
        </label>
        <input
          id="repeat-password"
          name="repeatPassword"
          type="password"
          autoComplete="new-password"
          required
          aria-invalid={invalid('repeat')}
        />
      </div>
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
