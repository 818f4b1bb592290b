import { DomainError } from '../../protocol/errors';

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
