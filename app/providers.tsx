'use client';

import { QueryClientProvider } from '@tanstack/react-query';
import type { Session } from 'next-auth';
import { SessionProvider } from 'next-auth/react';
import { useState, type ReactNode } from 'react';
import { loginUrl, signingOut } from '@/lib/login-url';
import { makeQueryClient } from '@/lib/query-client';
import { makeTrpcClient, TRPCProvider } from '@/lib/trpc';

/** Sends the operator to sign in again when the session ended while the console was open, and back here after. */
function signInAgain() {
  const { pathname, search } = window.location;
  if (pathname !== '/login' && !signingOut()) window.location.assign(loginUrl(pathname + search, { expired: true }));
}

export function Providers({ session, children }: { session: Session | null; children: ReactNode }) {
  const [queryClient] = useState(() => makeQueryClient({ onUnauthenticated: signInAgain }));
  const [trpcClient] = useState(makeTrpcClient);
  return (
    <SessionProvider session={session}>
      <QueryClientProvider client={queryClient}>
        <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
          {children}
        </TRPCProvider>
      </QueryClientProvider>
    </SessionProvider>
  );
}
