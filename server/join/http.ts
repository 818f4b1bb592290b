import { MAX_JOIN_BODY_BYTES } from '../../protocol/join-wire';

export const JOIN_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;

/** Reads a web Request's body up to the join limit, counting as it streams; null when it is larger. */
export async function readLimitedBody(request: Request): Promise<Buffer | null> {
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > MAX_JOIN_BODY_BYTES || !request.body) return declared > MAX_JOIN_BODY_BYTES ? null : Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_JOIN_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
