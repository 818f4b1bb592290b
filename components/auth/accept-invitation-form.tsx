'use client';

import { TRPCClientError } from '@trpc/client';
import { signIn } from 'next-auth/react';
import { useEffect, useState, type FormEvent } from 'react';
import { Field } from '@/components/ui/field';
import { useTRPCClient } from '@/lib/trpc';
import { ROLE_HINTS, type Role } from '@/components/access/roles';
import { MIN_PASSWORD_LENGTH, newPasswordErrors } from './new-password-errors';

interface InvitationDetails {
  tenantName: string;
  role: Role;
  email: string;
  invitedBy: string | null;
  expiresAt: string;
}

type Errors = Partial<Record<'password' | 'repeat' | 'form', string>>;

/**
 * Accepts the invitation in the link's fragment. It first shows what the link is for (tenant, role, who
 * invited, the email), then takes a name and a new password (or an existing account's password) and signs in.
 */
export function AcceptInvitationForm() {
  const client = useTRPCClient();
  const [token, setToken] = useState<string | null>(null);
  const [details, setDetails] = useState<InvitationDetails | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [errors, setErrors] = useState<Errors>({});
  const [isPending, setPending] = useState(false);
  useEffect(() => {
    // Another link pasted into the address bar changes only the fragment: read it afresh.
    const read = () => {
      setDetails(null);
      setLoadError(null);
      setErrors({});
      setToken(decodeURIComponent(window.location.hash.replace(/^#/, '')) || '');
    };
    read();
    window.addEventListener('hashchange', read);
    return () => window.removeEventListener('hashchange', read);
  }, []);
  useEffect(() => {
    if (!token) return;
    let current = true;
    client.invitations.describe
      .mutate({ token })
      .then((found) => current && setDetails(found as InvitationDetails))
      .catch((cause: unknown) => current && setLoadError(cause instanceof Error ? cause.message : 'Could not read the invitation.'));
    return () => {
      current = false;
    };
  }, [client, token]);

  // Handles its own failures (shown on the form); the form's handler starts it and does not wait.
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const name = String(form.get('name') ?? '').trim();
    const password = String(form.get('password') ?? '');
    // With a name, a new password: every problem at once. Without, the current password of an existing account.
    const found: Errors = {};
    if (name) {
      const problems = newPasswordErrors({ newPassword: password, repeat: String(form.get('repeatPassword') ?? '') });
      if (problems.new) found.password = problems.new;
      if (problems.repeat) found.repeat = problems.repeat;
    } else if (!password) {
      found.password = 'Give your name and a new password, or the password of your existing account.';
    }
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    setPending(true);
    try {
      const accepted = await client.invitations.accept.mutate({ token: token ?? '', password, ...(name ? { name } : {}) });
      // The token is spent: drop it from the address bar and the history entry before going on.
      window.history.replaceState(null, '', '/invite');
      const result = await signIn('credentials', { email: accepted.email, password, redirect: false });
      window.location.assign(result?.ok && !result.error ? '/' : '/login');
    } catch (cause) {
      const field = cause instanceof TRPCClientError ? (cause.data as { field?: string } | undefined)?.field : undefined;
      const text = cause instanceof Error ? cause.message : 'Could not accept the invitation.';
      setErrors(field === 'password' ? { password: text.replace(/^password: /, '') } : { form: text });
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
  if (loadError) {
    return (
      <p className="form-error" role="alert">
        {loadError}
      </p>
    );
  }
  if (!details) return <p className="login-intro">Reading the invitation…</p>;
  return (
    <>
      <dl className="invitation-details" aria-label="Invitation">
        <dt>Tenant</dt>
        <dd>{details.tenantName}</dd>
        <dt>Role</dt>
        <dd>
          {details.role} <span className="field-hint">({ROLE_HINTS[details.role]})</span>
        </dd>
        <dt>Invited by</dt>
        <dd>{details.invitedBy ?? 'an administrator'}</dd>
        <dt>Email</dt>
        <dd>{details.email}</dd>
      </dl>
      <form className="login-form" onSubmit={(event) => void onSubmit(event)} noValidate>
        {errors.form && (
          <p className="form-error" role="alert">
            {errors.form}
          </p>
        )}
        <input type="hidden" name="username" autoComplete="username" value={details.email} readOnly />
        <Field label="Your name" optional hint="Leave it empty if you already have an account.">
          {(control) => <input {...control} name="name" autoComplete="name" maxLength={100} autoFocus />}
        </Field>
        <Field
          label="Password"
          error={errors.password}
          hint={`A new password of at least ${MIN_PASSWORD_LENGTH} characters, or your current one if you already have an account.`}
        >
          {(control) => <input {...control} name="password" type="password" autoComplete="new-password" required />}
        </Field>
        <Field label="Repeat the password" error={errors.repeat}>
          {(control) => <input {...control} name="repeatPassword" type="password" autoComplete="new-password" />}
        </Field>
        <button type="submit" className="btn btn-primary btn-block" disabled={isPending}>
          {isPending ? 'Accepting…' : 'Accept and sign in'}
        </button>
      </form>
    </>
  );
}
