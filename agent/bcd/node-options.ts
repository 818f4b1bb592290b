import type { BcdConfig } from './config-toml';

/**
 * The options of the renewal loop (agent/renew/loop.ts: runRenewalLoop and doctorChecks) for a config.toml:
 * `bcd node` and the gateway part of `bcd doctor` pass exactly this. The gateway's TLS name defaults to the
 * URL's host; a gateway reached by IP address is named by that address, as its certificate's SAN carries it.
 */
interface RenewalLoopOptions {
  identityDir: string;
  gatewayUrl: string;
  servingCaPin: string;
  gatewayServerName?: string;
  basePath?: string;
}

export function renewalOptionsFromConfig(config: BcdConfig, identityDir: string): RenewalLoopOptions {
  const url = new URL(config.gatewayUrl);
  return {
    identityDir,
    gatewayUrl: url.origin,
    servingCaPin: config.servingCaSpkiPin,
    gatewayServerName: url.hostname.replace(/^\[|\]$/g, ''),
    ...(url.pathname !== '/' ? { basePath: url.pathname.replace(/\/+$/, '') } : {}),
  };
}
