'use client';

import { signOut } from 'next-auth/react';
import { useState } from 'react';
import { markSigningOut } from '@/lib/login-url';

export function SignOutButton() {
  const [isPending, setPending] = useState(false);
  return (
    <button
      type="button"
      className="btn btn-small btn-on-dark"
      disabled={isPending}
      onClick={() =>
        // Fire-and-forget: the page is left either way (a failed sign-out still lands on /login's own check).
        void (async () => {
          setPending(true);
          markSigningOut();
          // No next-auth redirect: its URL is built from NEXTAUTH_URL, which may name another host than the
          // one in the address bar. A full load also drops every cached answer of the signed-out operator.
          await signOut({ redirect: false });
          window.location.assign('/login');
        })()
      }
    >
      {isPending ? 'Signing out…' : 'Sign out'}
    </button>
  );
}
