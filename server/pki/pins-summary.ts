import { createPublicKey } from 'node:crypto';
import type { PkiBundle } from './bundle';
import { spkiPin } from '../../protocol/pins';

/**
 * The pins an install carries (`serving_ca_spki_pin`, `join_signing_key_pin`, `join_encryption_key_pin` in
 * bcd's config.toml), plus the node CA's. `pki init` and `pki show` print them; none is secret.
 */
export interface InstallPins {
  trustDomain: string;
  servingCaPin: string;
  joinSigningKeyPin: string;
  joinEncryptionKeyPin: string;
  nodeCaPin: string;
}

/** The pins of `bundle`'s public keys (HPKP form, `sha256/…`). */
export function installPins(bundle: PkiBundle): InstallPins {
  return {
    trustDomain: bundle.trustDomain,
    servingCaPin: spkiPin(bundle.servingCa.certificatePem),
    joinSigningKeyPin: spkiPin(bundle.signingKey.certificatePem),
    joinEncryptionKeyPin: spkiPin(createPublicKey(bundle.encryptionKey.privateKeyPem)),
    nodeCaPin: spkiPin(bundle.nodeCa.certificatePem),
  };
}

/**
 * `bootstrapPins(bundle)` in `joining.md`: the same pins, named for what travels with an install (user data,
 * a ramdisk's pinned config) so a host build of bcd can bootstrap from the well-known document.
 */
export const bootstrapPins = installPins;

/** The pins as aligned text for a terminal, ending with the config.toml lines an install embeds. */
export function formatPins(pins: InstallPins): string {
  const rows: Array<[string, string]> = [
    ['Trust domain', pins.trustDomain],
    ['Serving CA pin', pins.servingCaPin],
    ['Join signing key pin', pins.joinSigningKeyPin],
    ['Join encryption key pin', pins.joinEncryptionKeyPin],
    ['Node CA pin', pins.nodeCaPin],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    ...rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`),
    '',
    '# /etc/bcd/config.toml',
    `serving_ca_spki_pin = "${pins.servingCaPin}"`,
    `join_signing_key_pin = "${pins.joinSigningKeyPin}"`,
    `join_encryption_key_pin = "${pins.joinEncryptionKeyPin}"`,
    '',
  ].join('\n');
}
