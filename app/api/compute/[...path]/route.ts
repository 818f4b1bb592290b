import { getSessionOperatorId } from '@/server/auth/session';
import { getDb } from '@/server/db/client';
import { handleComputeRequest } from '@/server/http/compute';

export const dynamic = 'force-dynamic';

async function handle(request: Request) {
  return handleComputeRequest(request, { db: getDb(), sessionOperatorId: getSessionOperatorId });
}

// Every method reaches the one handler, so an unsupported one is a 405 in the error model rather than Next's.
export { handle as GET, handle as HEAD, handle as POST, handle as PUT, handle as PATCH, handle as DELETE, handle as OPTIONS };
