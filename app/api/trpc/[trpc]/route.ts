import { handleTrpcRequest } from '@/server/api/trpc-http';
import { nextEntry } from '@/server/boot/next-entry';

export const dynamic = 'force-dynamic';

function handle(request: Request) {
  return handleTrpcRequest(request, nextEntry().api());
}

export { handle as GET, handle as POST };
