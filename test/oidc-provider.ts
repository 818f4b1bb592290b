import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
// oidc-provider ships no type declarations; the few calls here are typed by hand below.
import { Provider } from 'oidc-provider';

/** A person the test provider knows, by login: the claims its ID tokens carry. */
interface TestPerson {
  email: string;
  email_verified: boolean;
  name?: string;
  groups?: string[];
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Mutable: a change applies from the next sign-in (a group removed at the provider). */
  people: Map<string, TestPerson>;
  close(): Promise<void>;
}

/** A free loopback port, for a server whose URL another must know before it starts. */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A real OpenID provider (panva's oidc-provider) on a loopback port with one confidential client for
 * `redirectUri`: authorization code with PKCE required, and its development login page (any login that
 * `people` knows; the password is not checked) and consent page. Its ID tokens carry email,
 * email_verified, name and groups, so the console's sign-in reads everything from the ID token.
 */
export async function startOidcProvider(options: {
  redirectUri: string | string[];
  people?: Record<string, TestPerson>;
  port?: number;
  clientId?: string;
  clientSecret?: string;
}): Promise<TestOidcProvider> {
  const port = options.port ?? (await freePort());
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = options.clientId ?? 'better-compute';
  const clientSecret = options.clientSecret ?? randomBytes(32).toString('base64url');
  const redirectUris = Array.isArray(options.redirectUri) ? options.redirectUri : [options.redirectUri];
  const people = new Map(Object.entries(options.people ?? {}));
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    // Scope claims in the ID token itself (not only at userinfo): the console reads the ID token.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx: unknown, id: string) => {
      const person = people.get(id);
      return person ? { accountId: id, claims: () => ({ sub: id, ...person }) } : undefined;
    },
  }) as unknown as { callback(): http.RequestListener };
  const server = http.createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    issuer,
    clientId,
    clientSecret,
    people,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Cookies of every response, sent on every request (both servers are on 127.0.0.1; the names differ). */
class CookieJar {
  readonly cookies = new Map<string, string>();
  store(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';', 1);
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      if (!value || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

interface SsoSignInResult {
  /** Where the console sent the browser after the provider's callback. */
  location: string;
  /** The console's session cookie header (`next-auth.session-token=…`), or null when none was set. */
  sessionCookie: string | null;
  jar: CookieJar;
}

/**
 * The whole authorization-code flow over HTTP, as a browser runs it: next-auth's sign-in (CSRF token, then
 * POST /api/auth/signin/oidc), the provider's authorize endpoint, its login and consent forms, and the
 * provider's redirect back to next-auth's callback, which decides. Follows redirects by hand, keeping cookies.
 */
export async function signInThroughProvider(consoleUrl: string, login: string, callbackUrl = '/'): Promise<SsoSignInResult> {
  const jar = new CookieJar();
  const go = async (url: string, init: RequestInit = {}) => {
    const response = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers ?? {}), cookie: jar.header() } });
    jar.store(response);
    return response;
  };
  const csrf = await go(`${consoleUrl}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const start = await go(`${consoleUrl}/api/auth/signin/oidc`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrfToken, callbackUrl, json: 'true' }).toString(),
  });
  let { url } = (await start.json()) as { url: string };
  for (let hop = 0; hop < 20; hop++) {
    if (url.startsWith(consoleUrl) && new URL(url).pathname.startsWith('/api/auth/callback/')) {
      const done = await go(url);
      const session = jar.cookies.get('next-auth.session-token');
      return {
        location: new URL(done.headers.get('location') ?? '', consoleUrl).toString(),
        sessionCookie: session ? `next-auth.session-token=${session}` : null,
        jar,
      };
    }
    const response = await go(url);
    if (response.status >= 300 && response.status < 400) {
      url = new URL(response.headers.get('location')!, url).toString();
      continue;
    }
    const html = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([a-z]+)"/.exec(html)?.[1];
    if (response.status !== 200 || !action || !prompt)
      throw new Error(`unexpected page from ${url} (${response.status}): ${html.slice(0, 500)}`);
    const form: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
    const posted = await go(new URL(action, url).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    url = new URL(posted.headers.get('location')!, url).toString();
  }
  throw new Error('the sign-in did not come back to the console within 20 redirects');
}
