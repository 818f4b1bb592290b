import { UsageError } from './join-setup';

/**
 * A base URL bcd is given (`--server`, config.toml's `gateway_url`, the well-known document's gateway), checked
 * and without trailing slashes: http or https, a host, no query or fragment. An IPv6 literal is written in
 * brackets, as in any URL (`https://[fd00::1]:8443`); a bare one (`https://fd00::1`) is refused here rather
 * than read as a host and a port.
 */
export function baseUrlOf(raw: string, what: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(
      `${what} is not a URL: ${raw}${/^https?:\/\/[0-9a-f]*:[0-9a-f:]*:/i.test(raw) ? ' (write an IPv6 address in brackets: https://[fd00::1]:8443)' : ''}`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError(`${what} must be an https:// URL, not ${raw}`);
  if (!url.hostname || url.search || url.hash || url.username || url.password)
    throw new UsageError(`${what} must be a base URL (scheme, host, port, path), not ${raw}`);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}
