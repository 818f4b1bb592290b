import { nextEntry } from '@/server/boot/next-entry';
import { handleComputeRequest } from '@/server/entry/compute';

export const dynamic = 'force-dynamic';

async function handle(request: Request) {
  return handleComputeRequest(request, nextEntry().api());
}

// Every method reaches the one handler, so an unsupported one is a 405 in the error model rather than Next's.
export { handle as GET, handle as HEAD, handle as POST, handle as PUT, handle as PATCH, handle as DELETE, handle as OPTIONS };
