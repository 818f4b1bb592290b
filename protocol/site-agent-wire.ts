/**
 * The site agent's two calls (docs/site-agent-wire.md): over the site agent's own mutual TLS through the
 * gateway, a `site` certificate asks for a discovery token bound to one MAC and gets a secret reference, then
 * redeems the reference once for the bearer token. Our extension: protocol.md does not define them. Pure, so
 * the agent (and bcd's bundle) can import it.
 */

/** Mint: `{ mac, ip?, bootLeaseEpoch }` → `{ ref, tokenId, expiresAt }`. */
export const SITE_DISCOVERY_TOKEN_PATH = '/v1/site/discovery-tokens';
/** Redeem: `{ ref }` → `{ tokenId, token }`, once. */
export const SITE_REDEEM_PATH = '/v1/site/discovery-tokens/redeem';

/** The largest body read for either call; a real one is under 200 bytes. */
export const MAX_SITE_AGENT_BODY_BYTES = 4 * 1024;

/** A secret reference: `sref_` and 32 base64url characters (24 random bytes). */
export const SECRET_REF = /^sref_[A-Za-z0-9_-]{32}$/;

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/**
 * Every refusal of either call is these bytes, whatever the reason (another site's lease, the cap, the rate, a
 * revoked certificate, a malformed body, a reference already redeemed); the reason is a
 * `security.site-agent.refused` event.
 */
export const SITE_AGENT_REFUSED = { status: 403, body: json({ code: 'ACCESS_DENIED', message: 'Site agent request refused' }) } as const;

export interface SiteMintRequest {
  mac: string;
  ip?: string;
  bootLeaseEpoch: number;
}

export interface SiteMintAnswer {
  ref: string;
  tokenId: string;
  expiresAt: string;
}

export interface SiteRedeemAnswer {
  tokenId: string;
  token: string;
}

const IP = /^[0-9A-Fa-f.:]{2,45}$/;
const MAC_TEXT = /^[0-9A-Fa-f]{2}([:-]?[0-9A-Fa-f]{2}){5}$/;

const objectOf = (text: string): Record<string, unknown> | null => {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};

/** A mint body, or null (unknown fields included: the calls are closed). */
export function parseSiteMintRequest(text: string): SiteMintRequest | null {
  const value = objectOf(text);
  if (!value || Object.keys(value).some((k) => !['mac', 'ip', 'bootLeaseEpoch'].includes(k))) return null;
  const { mac, ip, bootLeaseEpoch } = value;
  if (typeof mac !== 'string' || !MAC_TEXT.test(mac)) return null;
  if (ip !== undefined && (typeof ip !== 'string' || !IP.test(ip))) return null;
  if (typeof bootLeaseEpoch !== 'number' || !Number.isSafeInteger(bootLeaseEpoch) || bootLeaseEpoch < 0) return null;
  return { mac, bootLeaseEpoch, ...(ip === undefined ? {} : { ip }) };
}

/** A redeem body's reference, or null. */
export function parseSiteRedeemRequest(text: string): string | null {
  const value = objectOf(text);
  if (!value || Object.keys(value).length !== 1 || typeof value.ref !== 'string' || !SECRET_REF.test(value.ref)) return null;
  return value.ref;
}
