import { DomainError } from '../protocol/errors';
import { isDomainCode } from './errors';

/**
 * The data of a tRPC SSE stream's messages, parsed as JSON: `connected` and `ping` events are skipped, a
 * `serialized-error` ends the stream with the error (its domain code when it has one), `return` ends it
 * normally. Answers how it ended: `return`, or `closed` when the server closed the stream without one (its
 * lifetime cap), which a watcher answers by subscribing again.
 */
export async function* readServerSentEvents<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T, 'return' | 'closed'> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (event === 'return') return 'return';
      if (event === 'serialized-error') {
        const error = JSON.parse(data.join('\n')) as { message?: string; data?: { code?: string; domainCode?: string | null } };
        const code = error.data?.domainCode ?? error.data?.code;
        throw isDomainCode(code) ? new DomainError(code, error.message ?? code) : new Error(error.message ?? 'subscription failed');
      }
      if (event !== 'message' || !data.length) continue;
      yield JSON.parse(data.join('\n')) as T;
    }
  }
  return 'closed';
}
