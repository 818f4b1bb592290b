/**
 * The gateway's internal credentials call to the API (`POST {basePath}/v1/gateway/credentials`): how a
 * gateway follows a trust rotation without a restart. Pure: no database and no keys, so the gateway imports it.
 *
 * The gateway vouches for the call as for its lease (for no peer). Its body names the trust version it holds
 * and a CSR for a key it made itself (a private key never travels). The answer names the trust version, every
 * node CA to trust, and a new serving chain for that CSR only when the gateway's current leaf is not from the
 * serving CA in use or expires within a day, and what the gateway sends after its leaf (`servingCaChain`).
 */

export const GATEWAY_CREDENTIALS_PATH = '/v1/gateway/credentials';
/** The largest body read: a P-256 CSR is about 250 bytes (4 KiB at most, as a join's), in base64. */
export const MAX_GATEWAY_CREDENTIALS_BODY_BYTES = 8 * 1024;
/** At most this many node CAs in an answer (a rotation trusts two at once). */
const MAX_NODE_CAS = 8;
/** At most this many certificates after the leaf (the cross-certificate and the previous CA: two). */
const MAX_SERVING_CAS = 4;
/** A certificate is at most this many base64 characters (a CA of ours is under 1 KiB of DER). */
const MAX_CERTIFICATE_B64 = 16 * 1024;

interface GatewayCredentialsCall {
  /** b64 DER PKCS#10 for the key the gateway would serve next. */
  csr: string;
  /** The trust version the gateway holds (0 before its first answer). */
  trustVersion: number;
}

export interface GatewayCredentialsAnswer {
  trustVersion: number;
  /** b64 DER: the new leaf for the call's CSR, then the serving CA in use; null when the current leaf stays. */
  servingChain: [string, string] | null;
  /** b64 DER of every trusted node CA, the one in use first. */
  nodeCas: string[];
  /**
   * b64 DER, in order: what the gateway sends after its leaf. The serving CA in use; while a serving CA rotation
   * is active, the serving CA in use certified by the previous one, then the previous one (so a machine that pins
   * only the previous CA accepts the chain until the retirement). Absent from an API that predates it: the
   * gateway then sends `servingChain` as it is.
   */
  servingCaChain?: string[];
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/** Every refused call is these bytes, whatever the reason (unvouched, oversized, malformed, a bad CSR). */
export const GATEWAY_CREDENTIALS_REFUSED = {
  status: 403,
  body: json({ code: 'ACCESS_DENIED', message: 'Credentials refused' }),
} as const;

const isB64 = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max && /^[A-Za-z0-9+/]+={0,2}$/.test(value);
const isVersion = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The call's body, or null when it is not one (the API answers the uniform refusal). */
export function parseGatewayCredentialsCall(body: Buffer): GatewayCredentialsCall | null {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') return null;
  const { csr, trustVersion } = value as Record<string, unknown>;
  if (!isB64(csr, MAX_GATEWAY_CREDENTIALS_BODY_BYTES) || !isVersion(trustVersion)) return null;
  return { csr, trustVersion };
}

/** The API's answer, or null when it is not one (the gateway keeps what it has and asks again). */
export function parseGatewayCredentialsAnswer(body: Buffer): GatewayCredentialsAnswer | null {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') return null;
  const { trustVersion, servingChain, nodeCas } = value as Record<string, unknown>;
  if (!isVersion(trustVersion)) return null;
  if (!Array.isArray(nodeCas) || nodeCas.length === 0 || nodeCas.length > MAX_NODE_CAS) return null;
  if (!nodeCas.every((c) => isB64(c, MAX_CERTIFICATE_B64))) return null;
  if (servingChain !== null) {
    if (!Array.isArray(servingChain) || servingChain.length !== 2 || !servingChain.every((c) => isB64(c, MAX_CERTIFICATE_B64))) return null;
  }
  const { servingCaChain } = value as Record<string, unknown>;
  if (servingCaChain !== undefined) {
    if (!Array.isArray(servingCaChain) || servingCaChain.length === 0 || servingCaChain.length > MAX_SERVING_CAS) return null;
    if (!servingCaChain.every((c) => isB64(c, MAX_CERTIFICATE_B64))) return null;
  }
  return {
    trustVersion,
    servingChain: servingChain as [string, string] | null,
    nodeCas: nodeCas as string[],
    ...(servingCaChain ? { servingCaChain: servingCaChain as string[] } : {}),
  };
}
