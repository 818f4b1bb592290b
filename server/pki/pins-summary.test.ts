import { createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatPins, installPins } from './pins-summary';
import { fixturePki } from '../../test/pki/fixtures';
import { openssl } from '../../test/pki/openssl';

const { bundle } = fixturePki();

/** The pin openssl computes from a certificate's public key. */
function opensslCertPin(pem: string): string {
  const spki = openssl(['x509', '-in', '{c.pem}', '-noout', '-pubkey'], { 'c.pem': pem });
  const der = openssl(['pkey', '-pubin', '-outform', 'der'], {}, spki);
  return `sha256/${openssl(['dgst', '-sha256', '-binary'], {}, der).toString('base64')}`;
}

describe('installPins', () => {
  const pins = installPins(bundle);

  it('pins each public key exactly as openssl would', () => {
    expect(pins.trustDomain).toBe('compute.example.com');
    expect(pins.servingCaPin).toBe(opensslCertPin(bundle.servingCa.certificatePem));
    expect(pins.joinSigningKeyPin).toBe(opensslCertPin(bundle.signingKey.certificatePem));
    expect(pins.nodeCaPin).toBe(opensslCertPin(bundle.nodeCa.certificatePem));
    const encryptionSpki = createPublicKey(bundle.encryptionKey.privateKeyPem).export({ type: 'spki', format: 'der' });
    expect(pins.joinEncryptionKeyPin).toBe(`sha256/${openssl(['dgst', '-sha256', '-binary'], {}, encryptionSpki).toString('base64')}`);
    expect(new Set(Object.values(pins)).size).toBe(5);
  });

  it('formats them for a terminal with the config.toml lines, and no private material', () => {
    const text = formatPins(pins);
    expect(text).toContain(`Serving CA pin           ${pins.servingCaPin}`);
    expect(text).toContain(`serving_ca_spki_pin = "${pins.servingCaPin}"`);
    expect(text).toContain(`join_signing_key_pin = "${pins.joinSigningKeyPin}"`);
    expect(text).toContain(`join_encryption_key_pin = "${pins.joinEncryptionKeyPin}"`);
    expect(text).toContain(pins.nodeCaPin);
    expect(text).not.toContain('PRIVATE');
  });
});
