import type http from 'node:http';
import NextAuthImport, { type NextAuthOptions } from 'next-auth';

// CommonJS under Node's ESM loader: the handler is the module's `default`.
const NextAuth = (NextAuthImport as unknown as { default?: typeof NextAuthImport }).default ?? NextAuthImport;

/**
 * Serves `/api/auth/*` through next-auth's own handler (its pages-API form, which takes Node's request and
 * response), with the console's options: the same providers, callbacks and cookies as the app's
 * app/api/auth route, without a Next build. The request gets what Next's API routes would give it: the
 * path's parts as `query.nextauth`, the parsed body and cookies.
 */
export async function serveAuth(options: NextAuthOptions, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const type = req.headers['content-type'] ?? '';
  const body = !text ? {} : type.includes('application/json') ? JSON.parse(text) : Object.fromEntries(new URLSearchParams(text));
  const cookies = Object.fromEntries(
    (req.headers.cookie ?? '')
      .split(/;\s*/)
      .filter(Boolean)
      .map((c) => {
        const at = c.indexOf('=');
        return [c.slice(0, at), decodeURIComponent(c.slice(at + 1))];
      }),
  );
  const nextauth = url.pathname.slice('/api/auth/'.length).split('/').filter(Boolean);
  const request = Object.assign(req, { query: { ...Object.fromEntries(url.searchParams), nextauth }, body, cookies });
  const response = Object.assign(res, {
    status(code: number) {
      res.statusCode = code;
      return response;
    },
    json(value: unknown) {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(value));
    },
    send(value: unknown) {
      if (typeof value === 'object' && value !== null && !Buffer.isBuffer(value)) return response.json(value);
      res.end(value as string | undefined);
    },
  });
  await (NextAuth as unknown as (req: unknown, res: unknown, options: NextAuthOptions) => Promise<void>)(request, response, options);
}
