import { pinnedFetch } from './pinned-fetch';
import type { TrustStore } from '../trust/store';

const WELL_KNOWN = '/.well-known/better-compute';

/**
 * The fetch of `bcd join`: every call goes to the gateway, under the serving CA pins (config.toml's, or the trust
 * set's), as the join flow has it; a gateway URL in plain http (a development setup) is fetched as it is. The one
 * exception is the well-known document when `--server` names where to read it: that read goes to `--server`
 * with the system's CAs, since its keys are taken only when they match the install's pins.
 */
export function joinFetch(options: {
  gatewayUrl: string;
  servingCaPin: string;
  trust: TrustStore;
  /** `--server`, when given. */
  wellKnownUrl?: string;
  /** A fetch to use instead (in-process tests): it is given the routed URL. */
  fetch?: typeof fetch;
}): typeof fetch {
  const gatewayFetch =
    options.fetch ??
    (options.gatewayUrl.startsWith('https://') ? pinnedFetch({ servingCaPin: options.servingCaPin, trust: options.trust }) : fetch);
  const documentFetch = options.fetch ?? fetch;
  return ((input: string | URL | Request, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    if (options.wellKnownUrl && url.startsWith(options.gatewayUrl) && url.endsWith(WELL_KNOWN))
      return documentFetch(`${options.wellKnownUrl}${url.slice(options.gatewayUrl.length)}`, init);
    return gatewayFetch(input, init);
  }) as typeof fetch;
}
