import net from 'node:net';
import { isPublicAddress } from '../daemon/public-address';
import { invalidArgument } from '../../protocol/errors';
import { AddressRefused, bareHost, resolveCheckedAddresses, type Address } from '../http/pinned-request';

export const MAX_WEBHOOK_URL_LENGTH = 2_048;

/**
 * Checks a subscription's URL as given: an absolute http(s) URL without credentials or fragment and, unless
 * private targets are allowed, not naming a non-public address literal or `localhost`. Names are resolved and
 * checked again at every delivery ({@link resolveWebhookTarget}), since DNS can change after this check.
 *
 * @throws DomainError INVALID_ARGUMENT on `url`.
 */
export function checkWebhookUrl(value: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidArgument('url', 'not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidArgument('url', 'must be an https or http URL');
  if (url.username || url.password) throw invalidArgument('url', 'must not carry credentials');
  if (url.hash) throw invalidArgument('url', 'must not have a fragment');
  if (!allowPrivate) {
    const host = bareHost(url);
    if (net.isIP(host) && !isPublicAddress(host))
      throw invalidArgument('url', `${host} is not a public address (set BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE=true to allow it)`);
    if (/^localhost\.?$/i.test(host) || /\.localhost\.?$/i.test(host))
      throw invalidArgument('url', `${host} is this machine (set BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE=true to allow it)`);
  }
  return url;
}

/**
 * Resolves the URL's host once for one delivery and checks every address (server/daemon/public-address.ts)
 * unless private targets are allowed; the delivery connects to exactly these addresses.
 *
 * @throws AddressRefused naming the address refused.
 */
export async function resolveWebhookTarget(url: URL, allowPrivate: boolean): Promise<Address[]> {
  const host = bareHost(url);
  if (!allowPrivate && /^localhost\.?$/i.test(host)) throw new AddressRefused(`${host} is this machine`);
  return resolveCheckedAddresses(host, (address) => allowPrivate || isPublicAddress(address));
}
