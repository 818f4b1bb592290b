'use client';

import { signOut } from 'next-auth/react';
import { useState } from 'react';
import { markSigningOut } from '@/lib/login-url';
import { useHydrated } from '@/lib/use-now';

/** Signs out. Disabled until the page's scripts run: a click before then would do nothing and be lost. */
export function SignOutButton() {
  const [isPending, setPending] = useState(false);
  const hydrated = useHydrated();
  return (
    <button
      type="button"
      className="btn btn-small btn-on-dark"
      disabled={!hydrated || isPending}
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
