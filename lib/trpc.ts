import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import type { AppRouter } from '@/server/api/root';
import { TRPC_MAX_BATCH_SIZE } from '@/protocol/api/trpc-limits';

/** The typed tRPC hooks of the console; the router is imported as a type only, so no server code ships. */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

/**
 * The console's tRPC client. It calls the same origin, so the next-auth session cookie authenticates it;
 * there is no transformer because every procedure answers plain JSON (dates as RFC 3339 strings).
 * Subscriptions go over server-sent events (EventSource sends the same cookie); the rest is batched.
 */
export function makeTrpcClient() {
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({ url: '/api/trpc' }),
        false: httpBatchLink({ url: '/api/trpc', maxItems: TRPC_MAX_BATCH_SIZE }),
      }),
    ],
  });
}
