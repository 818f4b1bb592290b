'use client';

import { TRPCClientError } from '@trpc/client';
import { signIn } from 'next-auth/react';
import { useEffect, useState, type FormEvent } from 'react';
import { useTRPCClient } from '@/lib/trpc';

const MIN_LENGTH = 12;

/** Accepts the invitation in the link's fragment: a name and a new password (or an existing account's password), then signs in. */
export function AcceptInvitationForm() {
  const client = useTRPCClient();
  const [token, setToken] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [isPending, setPending] = useState(false);
  useEffect(() => setToken(decodeURIComponent(window.location.hash.replace(/^#/, '')) || ''), []);

  // Handles its own failures (shown on the form); the form's handler starts it and does not wait.
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const name = String(form.get('name') ?? '').trim();
    const password = String(form.get('password') ?? '');
    if (name && password.length < MIN_LENGTH) return setError(`Use at least ${MIN_LENGTH} characters for the password.`);
    if (name && password !== String(form.get('repeatPassword') ?? '')) return setError('The two passwords differ.');
    setPending(true);
    setError(null);
    try {
      const accepted = await client.invitations.accept.mutate({ token: token ?? '', password, ...(name ? { name } : {}) });
      // The token is spent: drop it from the address bar and the history entry before going on.
      window.history.replaceState(null, '', '/invite');
      const result = await signIn('credentials', { email: accepted.email, password, redirect: false });
      window.location.assign(result?.ok && !result.error ? '/' : '/login');
    } catch (cause) {
      setError(cause instanceof TRPCClientError || cause instanceof Error ? cause.message : 'Could not accept the invitation.');
      setPending(false);
    }
  }

  if (token === null) return null;
  if (!token) {
    return (
      <p className="form-error" role="alert">
        This page needs the whole invitation link, including the part after #. Ask your admin for a new one.
      </p>
    );
  }
  return (
    <form className="login-form" onSubmit={(event) => void onSubmit(event)} noValidate>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <div className="field">
        <label htmlFor="invite-name" className="field-label">
          Your name
        </label>
        <input id="invite-name" name="name" autoComplete="name" maxLength={100} autoFocus />
      </div>
      <div className="field">
        <label htmlFor="invite-password" className="field-label">
          Password
        </label>
        <input
          id="invite-password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          aria-describedby="invite-password-hint"
        />
        <span id="invite-password-hint" className="field-hint">
          A new password of at least {MIN_LENGTH} characters, or your current one if you already have an account.
        </span>
      </div>
      <div className="field">
        <label htmlFor="invite-repeat" className="field-label">
          Repeat the password
        </label>
        <input id="invite-repeat" name="repeatPassword" type="password" autoComplete="new-password" />
      </div>
      <button type="submit" className="btn btn-primary btn-block" disabled={isPending}>
        {isPending ? 'Accepting…' : 'Accept and sign in'}
      </button>
    </form>
  );
}
