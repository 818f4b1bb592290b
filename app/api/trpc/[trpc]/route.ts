import { getSessionOperatorId } from '@/server/auth/session';
import { handleTrpcRequest } from '@/server/api/trpc-http';
import { processServices } from '@/server/boot/services';

export const dynamic = 'force-dynamic';

function handle(request: Request) {
  return handleTrpcRequest(request, { db: processServices().db, sessionOperatorId: getSessionOperatorId });
}

export { handle as GET, handle as POST };
