import http from 'node:http';

/**
 * A minimal `fetch` for many simulated agents in one process: node:http over keep-alive sockets, which
 * costs a fraction of undici's fetch per request. Only what `sendJoin` uses (POST, status, text).
 */
export function keepAliveFetch(maxSockets: number): { fetch: typeof fetch; close: () => void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const post = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    new Promise((resolve, reject) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      const request = http.request(
        String(input),
        {
          method: init?.method ?? 'GET',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (c: Buffer) => chunks.push(c));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({
              status: response.statusCode ?? 0,
              ok: (response.statusCode ?? 0) < 300,
              text: async () => text,
              json: async () => JSON.parse(text),
            } as Response);
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      // A server that stops answering fails the join instead of hanging the simulation.
      request.setTimeout(30_000, () => request.destroy(new Error('The server did not answer within 30 s')));
      request.end(body);
    });
  return { fetch: post as typeof fetch, close: () => agent.destroy() };
}
