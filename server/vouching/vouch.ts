import { createHash, sign, verify, X509Certificate, type KeyObject } from 'node:crypto';
import { decodeBase64url } from '../../protocol/base64url';
import { spkiPin } from '../../protocol/pins';

/**
 * The gateway's vouching for a peer certificate: a short-lived assertion signed with the gateway's own
 * serving key, whose certificate the serving CA issued. JoinService believes a peer only when the
 * assertion verifies under a chain that ends in the pinned serving CA and binds this exact peer
 * certificate, body and path; a caller who sets the headers on a direct call cannot produce one.
 */
export const VOUCH_HEADER = 'x-bc-gateway-vouch';
export const PEER_HEADER = 'x-bc-peer-certificate';
/** How long an assertion is believed (both ways, for clock skew between gateway and API). */
const VOUCH_MAX_AGE_SECONDS = 30;

interface Assertion {
  /** The gateway's certificate and the serving CA, b64 DER. */
  chain: [string, string];
  /** Lowercase hex SHA-256 of the peer certificate's DER, or '' when the caller presented none. */
  peer: string;
  body: string;
  path: string;
  iat: number;
  /** The address the gateway's caller connected from (joins only): what the API records as the client address. */
  addr?: string;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** What the gateway needs to vouch: its key and its chain (leaf, serving CA), DER. */
export interface GatewayVoucher {
  key: KeyObject;
  chainB64: [string, string];
}

const assertionHeads = new WeakMap<GatewayVoucher, string>();

/**
 * The headers the gateway adds to a relayed call (`peerDer` null when no client certificate). `addr`, the
 * caller's address as the gateway's socket saw it, is signed with the rest, so the API believes it only
 * when the whole vouching verifies.
 */
export function vouchHeaders(
  voucher: GatewayVoucher,
  peerDer: Buffer | null,
  body: Buffer,
  path: string,
  now = Date.now(),
  addr?: string,
): Record<string, string> {
  // JSON.stringify of an Assertion, with the chain's part (about 1.5 KB, the same on every call) made once.
  let head = assertionHeads.get(voucher);
  if (!head) assertionHeads.set(voucher, (head = JSON.stringify({ chain: voucher.chainB64 }).slice(0, -1)));
  const json = `${head},"peer":"${peerDer ? sha256(peerDer) : ''}","body":"${sha256(body)}","path":${JSON.stringify(path)},"iat":${Math.floor(now / 1000)}${addr ? `,"addr":${JSON.stringify(addr)}` : ''}}`;
  const payload = Buffer.from(json);
  const sig = sign('sha256', payload, { key: voucher.key, dsaEncoding: 'ieee-p1363' });
  const headers: Record<string, string> = { [VOUCH_HEADER]: `${payload.toString('base64url')}.${sig.toString('base64url')}` };
  if (peerDer) headers[PEER_HEADER] = peerDer.toString('base64');
  return headers;
}

// Gateway certificates whose chain already verified, by the hash of leaf and CA: one verification per gateway.
const verifiedGateways = new Map<string, KeyObject>();

/**
 * The serving CA pins a vouching may chain to: one pin, or, while a serving-CA rotation is prepared or active,
 * every trusted one (TrustState.servingCaPins), so a gateway still serving the previous CA's leaf, and one
 * already moved to the next, both vouch.
 */
type ServingCaPins = string | readonly string[];

const pinsKey = (pins: ServingCaPins) => (typeof pins === 'string' ? pins : pins.join(','));
const pinTrusted = (pins: ServingCaPins, pin: string) => (typeof pins === 'string' ? pins === pin : pins.includes(pin));

function gatewayKey(chain: unknown, servingCaPins: ServingCaPins, now: number): KeyObject | null {
  if (!Array.isArray(chain) || chain.length !== 2 || !chain.every((c) => typeof c === 'string')) return null;
  const [leafText, caText] = chain as [string, string]; // two strings: checked just above
  // The pins are part of the key: a chain verified under a set that held a since-retired CA is checked again.
  const cacheKey = `${pinsKey(servingCaPins)}|${sha256(Buffer.from(chain.join('.')))}`;
  let key = verifiedGateways.get(cacheKey);
  if (!key) {
    const leaf = new X509Certificate(Buffer.from(leafText, 'base64'));
    const ca = new X509Certificate(Buffer.from(caText, 'base64'));
    if (!ca.ca || !pinTrusted(servingCaPins, spkiPin(ca.publicKey)) || !leaf.verify(ca.publicKey) || leaf.ca) return null;
    if (verifiedGateways.size >= 64) verifiedGateways.clear();
    key = leaf.publicKey;
    verifiedGateways.set(cacheKey, key);
    // The validity is checked on every call below, from the cached certificate's dates.
    validity.set(key, [Date.parse(leaf.validFrom), Date.parse(leaf.validTo)]);
  }
  const [from, to] = validity.get(key)!;
  return now >= from && now <= to ? key : null;
}
const validity = new WeakMap<KeyObject, [number, number]>();

/**
 * The peer certificate the gateway vouched for on this call: DER when the assertion verifies, binds this
 * body and path and is fresh, and the peer header matches it; `'no-peer'` when a valid vouching says the caller
 * presented no client certificate; null when there is no valid vouching.
 */
export function vouchedPeer(
  headers: { vouch: string | undefined; peer: string | undefined },
  body: Buffer,
  path: string,
  servingCaPins: ServingCaPins,
  now = Date.now(),
): Buffer | 'no-peer' | null {
  const assertion = verifiedAssertion(headers.vouch, body, path, servingCaPins, now);
  if (!assertion) return null;
  if (assertion.peer === '' && !headers.peer) return 'no-peer';
  if (!headers.peer) return null;
  const peer = Buffer.from(headers.peer, 'base64');
  if (typeof assertion.peer !== 'string' || assertion.peer !== sha256(peer)) return null;
  return peer;
}

/**
 * The caller's address the gateway vouched for on this call (a join it relayed), or null when there is no
 * valid vouching for this body and path, or it names no address.
 */
export function vouchedClientAddress(
  vouch: string | undefined,
  body: Buffer,
  path: string,
  servingCaPins: ServingCaPins,
  now = Date.now(),
): string | null {
  const addr = verifiedAssertion(vouch, body, path, servingCaPins, now)?.addr;
  return typeof addr === 'string' && addr.length > 0 && addr.length <= 64 ? addr : null;
}

/**
 * True when the vouching could hold for some body: it verifies under a gateway chain of the pinned serving CA,
 * is fresh and names this path; only the body's hash is left to check. The API asks this before it reads a
 * large body, so a caller without a gateway's vouching is refused without sending it.
 */
export function vouchHoldsBeforeBody(vouch: string | undefined, path: string, servingCaPins: ServingCaPins, now = Date.now()): boolean {
  return signedAssertion(vouch, path, servingCaPins, now) !== null;
}

/** The assertion when it verifies under a gateway chain of the pinned serving CA, is fresh, and binds this body and path. */
function verifiedAssertion(
  vouch: string | undefined,
  body: Buffer,
  path: string,
  servingCaPins: ServingCaPins,
  now: number,
): Partial<Assertion> | null {
  const assertion = signedAssertion(vouch, path, servingCaPins, now);
  return assertion && assertion.body === sha256(body) ? assertion : null;
}

/** The assertion when it verifies under a gateway chain of the pinned serving CA, is fresh, and names this path. */
function signedAssertion(vouch: string | undefined, path: string, servingCaPins: ServingCaPins, now: number): Partial<Assertion> | null {
  if (!vouch) return null;
  const [payloadText, sigText, extra] = vouch.split('.');
  if (extra !== undefined || !payloadText || !sigText) return null;
  const payload = decodeBase64url(payloadText);
  const sig = decodeBase64url(sigText);
  if (!payload || !sig || sig.length !== 64) return null;
  let assertion: Partial<Assertion>;
  try {
    assertion = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  let key: KeyObject | null;
  try {
    key = gatewayKey(assertion.chain, servingCaPins, now);
  } catch {
    return null;
  }
  if (!key || !verify('sha256', payload, { key, dsaEncoding: 'ieee-p1363' }, sig)) return null;
  if (typeof assertion.iat !== 'number' || Math.abs(now / 1000 - assertion.iat) > VOUCH_MAX_AGE_SECONDS) return null;
  if (assertion.path !== path) return null;
  return assertion;
}
