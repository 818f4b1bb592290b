import { getServerSession } from 'next-auth';
import { authOptions } from '@/server/auth/auth-options';
import { getDb } from '@/server/db/client';
import { handleComputeRequest } from '@/server/http/compute';

export const dynamic = 'force-dynamic';

async function handle(request: Request) {
  return handleComputeRequest(request, {
    db: getDb(),
    sessionOperatorId: async () => ((await getServerSession(authOptions))?.user as { id?: string } | undefined)?.id ?? null,
  });
}

export { handle as GET, handle as POST };
