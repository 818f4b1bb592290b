'use client';

import { signIn } from 'next-auth/react';
import { useRef, useState, type FormEvent } from 'react';
import { Field } from '@/components/ui/field';

/** The single sign-on button: next-auth sends the browser to the OpenID provider and back to `destination`. */
export function SsoButton({ label, destination }: { label: string; destination: string }) {
  const [isPending, setPending] = useState(false);
  return (
    <button
      type="button"
      className="btn btn-primary btn-block"
      disabled={isPending}
      onClick={() => {
        setPending(true);
        void signIn('oidc', { callbackUrl: destination });
      }}
    >
      {isPending ? 'Redirecting…' : `Continue with ${label}`}
    </button>
  );
}

/** Email and password against next-auth's credentials provider; `destination` is already a safe path. */
export function LoginForm({ destination }: { destination: string }) {
  const [error, setError] = useState<string | null>(null);
  const [isPending, setPending] = useState(false);
  const passwordRef = useRef<HTMLInputElement>(null);

  // Handles its own failures (shown on the form); the form's handler starts it and does not wait.
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setPending(true);
    setError(null);
    try {
      const result = await signIn('credentials', {
        email: String(form.get('email') ?? ''),
        password: String(form.get('password') ?? ''),
        redirect: false,
      });
      if (result?.ok && !result.error) {
        // A full load, so the server renders the console with the new session cookie.
        window.location.assign(destination);
        return;
      }
      setError(
        result?.error === 'CredentialsSignin'
          ? 'Wrong email or password.'
          : result?.error === 'TooManyFailedSignIns'
            ? 'Too many failed sign-ins for this email from this address: wait a few minutes and try again, or reset the password with better-compute operators reset-password --local.'
            : result?.error === 'PasswordChecksBusy'
              ? 'Too many password checks at once (from your address or on this server): try again in a moment.'
              : 'Sign-in failed. Try again in a moment.',
      );
      // A rejected password is not left on the page; the operator types it again.
      if (passwordRef.current) {
        passwordRef.current.value = '';
        passwordRef.current.focus();
      }
    } catch {
      setError('Could not reach the server. Check your connection and try again.');
    }
    setPending(false);
  }

  return (
    <form className="login-form" onSubmit={(event) => void onSubmit(event)}>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <Field label="Email">
        {(control) => (
          <input
            {...control}
            name="email"
            type="email"
            autoComplete="username"
            required
            autoFocus
            aria-invalid={error ? true : undefined}
          />
        )}
      </Field>
      <Field label="Password">
        {(control) => (
          <input
            {...control}
            ref={passwordRef}
            name="password"
            type="password"
            autoComplete="current-password"
            required
            aria-invalid={error ? true : undefined}
          />
        )}
      </Field>
      <button type="submit" className="btn btn-primary btn-block" disabled={isPending}>
        {isPending ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
