import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { getSessionOperatorId } from '@/lib/session';
import { createApiContext } from '@/server/api/context';
import { appRouter } from '@/server/api/root';
import { getDb } from '@/server/db/client';

export const dynamic = 'force-dynamic';

function handle(request: Request) {
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req: request,
    router: appRouter,
    createContext: () => createApiContext(getDb(), request.headers, getSessionOperatorId),
  });
}

export { handle as GET, handle as POST };
