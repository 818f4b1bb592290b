import { createPublicKey, sign, verify, X509Certificate as NodeX509 } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, importJWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../protocol/errors';
import { createPkiBundle } from '../bundle/bundle';
import { joinCryptoFromBundle, pkiJoinCrypto, wellKnownJoinSection } from './join-crypto';
import { installPins } from '../pins-summary';
import { spkiPin } from '../../../protocol/pins';
import { fixturePki, thrownBy } from '../../../test/pki/fixtures';
import { withNodeCaIssuedSigningCertificate } from '../../../test/pki/legacy';

const { bundle, joinCrypto } = fixturePki();

describe('pkiJoinCrypto', () => {
  it('parses the bundle into keys and public values that match its pins', () => {
    const pins = installPins(bundle);
    expect(joinCrypto.trustDomain).toBe('compute.example.com');
    expect(joinCrypto.signingKeyPin).toBe(pins.joinSigningKeyPin);
    expect(joinCrypto.encryptionKeyPin).toBe(pins.joinEncryptionKeyPin);
    expect(joinCrypto.nodeCa.certDer.equals(new NodeX509(bundle.nodeCa.certificatePem).raw)).toBe(true);
    expect(joinCrypto.nodeCaCertificate).toBe(joinCrypto.nodeCa.certDer.toString('base64'));
    expect(joinCrypto.signingCertificate).toBe(new NodeX509(bundle.signingKey.certificatePem).raw.toString('base64'));
    expect(joinCrypto.commandTrustBundle).toEqual(bundle.commandTrustBundle);
    expect([joinCrypto.nodeCa.key.type, joinCrypto.signingKey.type, joinCrypto.encryptionKey.type]).toEqual([
      'private',
      'private',
      'private',
    ]);
  });

  it('publishes the encryption key as a bare public P-256 JWK whose pin is the pinned one', async () => {
    expect(Object.keys(joinCrypto.encryptionPublicJwk).sort()).toEqual(['crv', 'kty', 'x', 'y']);
    expect(joinCrypto.encryptionPublicJwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(spkiPin(createPublicKey({ key: { ...joinCrypto.encryptionPublicJwk }, format: 'jwk' }))).toBe(joinCrypto.encryptionKeyPin);
  });

  it('opens a token sealed the way the daemon seals it (ECDH-ES+A256KW, A256GCM) with jose', async () => {
    const recipient = await importJWK({ ...joinCrypto.encryptionPublicJwk }, 'ECDH-ES+A256KW');
    const jwe = await new CompactEncrypt(new TextEncoder().encode('bcjt_jt_x.y'))
      .setProtectedHeader({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM', typ: 'bcjt+jwe' })
      .encrypt(recipient);
    const { plaintext } = await compactDecrypt(jwe, joinCrypto.encryptionKey);
    expect(new TextDecoder().decode(plaintext)).toBe('bcjt_jt_x.y');
  });

  it('signs ES256 envelopes that verify under the published signing certificate', () => {
    const body = Buffer.from('{"status":"joined"}');
    const sig = sign('sha256', body, { key: joinCrypto.signingKey, dsaEncoding: 'ieee-p1363' });
    const cert = new NodeX509(Buffer.from(joinCrypto.signingCertificate, 'base64'));
    expect(verify('sha256', body, { key: cert.publicKey, dsaEncoding: 'ieee-p1363' }, sig)).toBe(true);
  });

  it('accepts PEM in the command trust bundle and normalizes it to base64 DER', () => {
    const fromPem = pkiJoinCrypto({ ...bundle, commandTrustBundle: [bundle.commandCa.certificatePem] });
    expect(fromPem.commandTrustBundle).toEqual(bundle.commandTrustBundle);
    expect(pkiJoinCrypto({ ...bundle, commandTrustBundle: undefined }).commandTrustBundle).toEqual([]);
  });

  it('accepts a signing certificate the node CA issued (a bundle from before the rotation), with the same pin', () => {
    const legacy = pkiJoinCrypto(withNodeCaIssuedSigningCertificate(bundle));
    expect(legacy.signingKeyPin).toBe(joinCrypto.signingKeyPin);
  });

  it('refuses keys that do not belong together, naming the part and no key material', () => {
    const other = createPkiBundle({ trustDomain: 'compute.example.com' });
    const cases: Array<[Parameters<typeof pkiJoinCrypto>[0], RegExp]> = [
      [{ ...bundle, nodeCa: { ...bundle.nodeCa, privateKeyPem: other.nodeCa.privateKeyPem } }, /node CA private key does not match/],
      [{ ...bundle, nodeCa: bundle.signingKey }, /node CA certificate is not a CA/],
      // Issued by another deployment's node CA: neither self-signed nor this node CA's.
      [
        { ...bundle, signingKey: withNodeCaIssuedSigningCertificate(other).signingKey },
        /signing certificate is neither self-signed nor issued by the node CA/,
      ],
      [{ ...bundle, signingKey: bundle.nodeCa }, /signing certificate must not be a CA certificate/],
      [
        { ...bundle, signingKey: { ...bundle.signingKey, privateKeyPem: other.signingKey.privateKeyPem } },
        /signing private key does not match/,
      ],
      [{ ...bundle, encryptionKey: { privateKeyPem: 'garbage' } }, /encryption private key does not parse/],
      [{ ...bundle, commandTrustBundle: ['bm90IGEgY2VydA=='] }, /commandTrustBundle\[0\] is not a certificate/],
    ];
    for (const [input, message] of cases) {
      const error = thrownBy(() => pkiJoinCrypto(input)) as DomainError;
      expect(error).toBeInstanceOf(DomainError);
      expect(error.code).toBe('INVALID_CONFIG');
      expect(error.message).toMatch(message);
      expect(error.message).not.toMatch(/BEGIN|MII/);
    }
    expect(thrownBy(() => pkiJoinCrypto({ ...bundle, trustDomain: 'nope' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'trustDomain',
    });
  });
});

describe('wellKnownJoinSection', () => {
  it('is exactly the join section protocol.md fixes, with public material only', () => {
    const section = wellKnownJoinSection(joinCryptoFromBundle(bundle));
    expect(Object.keys(section)).toEqual(['encryptionJwk', 'encryptionKeyPin', 'signingCertificate', 'signingKeyPin']);
    expect(section).toEqual({
      encryptionJwk: joinCrypto.encryptionPublicJwk,
      encryptionKeyPin: joinCrypto.encryptionKeyPin,
      signingCertificate: joinCrypto.signingCertificate,
      signingKeyPin: joinCrypto.signingKeyPin,
    });
    expect(section.signingCertificate).toMatch(/^MII[A-Za-z0-9+/]+={0,2}$/);
    expect(JSON.stringify(section)).not.toMatch(/"d"|PRIVATE/);
  });
});
