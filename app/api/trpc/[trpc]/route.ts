import { getSessionOperatorId } from '@/server/auth/session';
import { handleTrpcRequest } from '@/server/api/trpc-http';
import { getDb } from '@/server/db/client';

export const dynamic = 'force-dynamic';

function handle(request: Request) {
  return handleTrpcRequest(request, { db: getDb(), sessionOperatorId: getSessionOperatorId });
}

export { handle as GET, handle as POST };
