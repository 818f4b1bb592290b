import { DomainError } from '../../protocol/errors';

/** The default cap of an API request body; a REST route may set its own (`RestRoute.maxBodyBytes`). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** A refusal that answers with an HTTP status outside the domain error table (413, 415). */
export class HttpRefusal extends DomainError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super('INVALID_ARGUMENT', message);
  }
}

/**
 * True only for the media type `application/json`, optionally with a `charset` parameter. A prefix test
 * would let `application/json-seq` through, and every type a cross-site form can send (text/plain,
 * multipart/form-data, application/x-www-form-urlencoded) must stay out: a JSON body is what forces a
 * browser to preflight a cross-origin request.
 */
export function isJsonContentType(value: string | null): boolean {
  if (!value) return false;
  const [type, ...params] = value.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((param) => param === '' || /^charset="?utf-8"?$/.test(param));
}

/** The origin (scheme://host[:port]) of the console's public URL, or null when it is not configured. */
export function consoleOrigin(publicUrl = process.env.NEXTAUTH_URL): string | null {
  if (!publicUrl) return null;
  try {
    return new URL(publicUrl).origin;
  } catch {
    return null;
  }
}

/**
 * Refuses a state-changing request that rides on a session cookie but was not sent by the console's own
 * pages. Browsers mark every request with `Sec-Fetch-Site` and every POST with `Origin`, so a page on
 * another site (or another origin of the same site, which can frame or post to the console) is told apart;
 * a request with neither header did not come from a browser, so no ambient cookie was spent.
 * The origin may be the configured public URL or the Host the request was sent to (a console reached
 * under another name than NEXTAUTH_URL is still same-origin for the browser that loaded it).
 */
export function checkSessionOrigin(headers: Headers, publicUrl = process.env.NEXTAUTH_URL): DomainError | null {
  const fetchSite = headers.get('sec-fetch-site');
  if (fetchSite && fetchSite !== 'same-origin' && fetchSite !== 'none') {
    return new DomainError('ACCESS_DENIED', `A console session cannot be used from another site (Sec-Fetch-Site: ${fetchSite})`);
  }
  const origin = headers.get('origin');
  if (origin === null) return null;
  const allowed = new Set<string>();
  const configured = consoleOrigin(publicUrl);
  if (configured) allowed.add(configured);
  const host = headers.get('host')?.toLowerCase();
  if (host) {
    allowed.add(`http://${host}`);
    allowed.add(`https://${host}`);
  }
  if (!allowed.has(origin.toLowerCase())) {
    return new DomainError('ACCESS_DENIED', 'A console session can only be used from the console itself (Origin does not match)');
  }
  return null;
}

/**
 * Reads a web Request's body, counting as it streams, and refuses it with 413 as soon as it passes
 * `limit` bytes (or declares more up front), so an oversized body is never held in memory.
 */
export async function readBodyWithin(request: Request, limit: number): Promise<string> {
  const tooLarge = () => new HttpRefusal(413, `The request body is larger than ${limit} bytes`);
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > limit) throw tooLarge();
  if (!request.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
