import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { spkiPin } from '../../protocol/pins';
import { DEFAULT_BASE_PATH } from '../join';
import type { EncryptionJwk } from '../seal-token';
import type { BcdConfig } from './config-toml';

/** The three pins a host build of bcd needs before it trusts a well-known document. */
interface InstallPins {
  servingCaPin: string;
  joinSigningPin: string;
  joinEncryptionPin: string;
}

interface WellKnownDocument {
  gateway?: { url?: unknown; servingCaPin?: unknown };
  join?: { encryptionJwk?: unknown; encryptionKeyPin?: unknown; signingKeyPin?: unknown };
}

/**
 * Builds bcd's configuration from `{server}{basePath}/.well-known/better-compute` when there is no config.toml:
 * the gateway URL from its `gateway` section, the pins only from the install. A document whose pins differ
 * from the install's is refused whole: taking them would be trust on first use of whoever serves that name.
 * The site is not in the document; the join answer names it, and the caller fills it in after the join.
 * The encryption JWK is still checked against the pin by loadJoinEncryptionKey when the join seals.
 */
export async function configFromWellKnown(options: {
  serverUrl: string;
  basePath?: string;
  pins: InstallPins;
  fetch?: typeof fetch;
}): Promise<{ config: Omit<BcdConfig, 'site'>; encryptionJwk: EncryptionJwk }> {
  const url = `${options.serverUrl.replace(/\/+$/, '')}${options.basePath ?? DEFAULT_BASE_PATH}/.well-known/better-compute`;
  const response = await (options.fetch ?? fetch)(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(15_000) });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  const doc = (await response.json()) as WellKnownDocument;
  const { gateway, join } = doc ?? {};
  if (!gateway || typeof gateway.url !== 'string')
    throw new Error(`${url} publishes no gateway section: the server has no gateway configured`);
  if (!join) throw new Error(`${url} publishes no join section: the server has no JoinService keys configured`);
  const mismatched = [
    ['serving CA', gateway.servingCaPin, options.pins.servingCaPin],
    ['join signing', join.signingKeyPin, options.pins.joinSigningPin],
    ['join encryption', join.encryptionKeyPin, options.pins.joinEncryptionPin],
  ].filter(([, published, pinned]) => published !== pinned);
  if (mismatched.length > 0) {
    throw new Error(`Refusing ${url}: its ${mismatched.map(([name]) => name).join(', ')} pin differs from the one given at install`);
  }
  // The document's pin field is only a claim: the key itself must hash to the pin before it is kept on disk.
  let keyPin: string | null = null;
  try {
    keyPin = spkiPin(createPublicKey({ key: join.encryptionJwk as JsonWebKey, format: 'jwk' }));
  } catch {
    // not a public key: refused below
  }
  if (keyPin !== options.pins.joinEncryptionPin)
    throw new Error(`Refusing ${url}: its join.encryptionJwk does not match the join encryption pin`);
  const { kty, crv, x, y } = join.encryptionJwk as EncryptionJwk;
  return {
    config: {
      gatewayUrl: gateway.url,
      servingCaSpkiPin: options.pins.servingCaPin,
      joinSigningKeyPin: options.pins.joinSigningPin,
      joinEncryptionKeyPin: options.pins.joinEncryptionPin,
    },
    encryptionJwk: { kty, crv, x, y },
  };
}
