import packageJson from '../../package.json';

/** Where every API of the control plane lives; the agent contract fixes it. */
export const BASE_PATH = '/api/compute';

export const PRODUCT_VERSION: string = packageJson.version;

interface GatewayConfig {
  url: string;
  serverName?: string;
}

/**
 * The gateway the daemons dial, from BETTER_COMPUTE_GATEWAY_URL (and _SERVER_NAME), when one is configured. The
 * server name defaults to the URL's host; an IPv6 literal's is the address without its brackets (`::1`), the
 * name its certificate's IP SAN holds.
 */
export function gatewayConfig(): GatewayConfig | null {
  const url = process.env.BETTER_COMPUTE_GATEWAY_URL;
  if (!url) return null;
  return { url, serverName: process.env.BETTER_COMPUTE_GATEWAY_SERVER_NAME || new URL(url).hostname.replace(/^\[|\]$/g, '') };
}
