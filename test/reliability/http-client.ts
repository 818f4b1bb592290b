import http from 'node:http';

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * node:http over keep-alive sockets, sending exact bytes (a fuzzed body need not be valid UTF-8 or JSON)
 * and reading the whole answer. A connection the server drops (it was killed) rejects with the socket's error.
 */
export function rawHttpClient(maxSockets: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const send = (
    method: string,
    url: string,
    options: { body?: Buffer | string; headers?: Record<string, string> } = {},
  ): Promise<RawAnswer> =>
    new Promise((resolve, reject) => {
      const body = options.body === undefined ? undefined : Buffer.from(options.body);
      const headers: Record<string, string | number> = { ...options.headers };
      if (body) headers['content-length'] = body.length;
      const request = http.request(url, { method, agent, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      });
      request.on('error', reject);
      request.setTimeout(30_000, () => request.destroy(new Error(`${method} ${url} got no answer within 30 s`)));
      request.end(body);
    });
  return { send, close: () => agent.destroy() };
}

/** Runs `task(i)` for i in [0, count) on `concurrency` workers. */
export async function forEachConcurrently(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}
