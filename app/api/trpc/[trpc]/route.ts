import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { getServerSession } from 'next-auth';
import { authOptions } from '@/server/auth/auth-options';
import { createApiContext } from '@/server/api/context';
import { appRouter } from '@/server/api/root';
import { getDb } from '@/server/db/client';

export const dynamic = 'force-dynamic';

function handle(request: Request) {
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req: request,
    router: appRouter,
    createContext: () =>
      createApiContext(getDb(), request.headers, async () => ((await getServerSession(authOptions))?.user as { id?: string } | undefined)?.id ?? null),
  });
}

export { handle as GET, handle as POST };
