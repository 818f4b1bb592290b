import { getSessionOperatorId } from '@/lib/session';
import { getDb } from '@/server/db/client';
import { handleComputeRequest } from '@/server/http/compute';

export const dynamic = 'force-dynamic';

async function handle(request: Request) {
  return handleComputeRequest(request, { db: getDb(), sessionOperatorId: getSessionOperatorId });
}

export { handle as GET, handle as POST };
