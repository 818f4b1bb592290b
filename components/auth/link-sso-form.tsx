'use client';

import { TRPCClientError } from '@trpc/client';
import { signIn } from 'next-auth/react';
import { useEffect, useState, type FormEvent } from 'react';
import { Field } from '@/components/ui/field';
import { useTRPCClient } from '@/lib/trpc';

/**
 * Links single sign-on to an existing account: the link token in the page's fragment (staged by the sign-in)
 * and the account's own password. Then single sign-on signs in as that account.
 */
export function LinkSsoForm() {
  const client = useTRPCClient();
  const [token, setToken] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [linked, setLinked] = useState<string | null>(null);
  const [isPending, setPending] = useState(false);
  useEffect(() => setToken(decodeURIComponent(window.location.hash.replace(/^#/, '')) || ''), []);

  // Handles its own failures (shown on the form); the form's handler starts it and does not wait.
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const password = String(new FormData(event.currentTarget).get('password') ?? '');
    if (!password) return setError('Give the password of your account.');
    setPending(true);
    setError(null);
    try {
      const { email } = await client.account.linkSso.mutate({ token: token ?? '', password });
      // The token is spent: drop it from the address bar and the history entry.
      window.history.replaceState(null, '', '/link-sso');
      setLinked(email);
    } catch (cause) {
      const field = cause instanceof TRPCClientError ? (cause.data as { field?: string } | undefined)?.field : undefined;
      setError(
        field === 'password' ? 'That is not the password of this account.' : cause instanceof Error ? cause.message : 'Could not link.',
      );
    }
    setPending(false);
  }

  if (token === null) return null;
  if (linked) {
    return (
      <div className="login-form">
        <p className="callout" role="status">
          Single sign-on is linked to {linked}. Sign in with it from now on.
        </p>
        <button type="button" className="btn btn-primary btn-block" onClick={() => void signIn('oidc', { callbackUrl: '/' })}>
          Sign in with single sign-on
        </button>
      </div>
    );
  }
  if (!token) {
    return (
      <p className="form-error" role="alert">
        This page needs the whole link, including the part after #. Sign in with single sign-on again.
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
      <Field label="Password of your account">
        {(control) => <input {...control} name="password" type="password" autoComplete="current-password" required autoFocus />}
      </Field>
      <button type="submit" className="btn btn-primary btn-block" disabled={isPending}>
        {isPending ? 'Linking…' : 'Link single sign-on'}
      </button>
    </form>
  );
}
