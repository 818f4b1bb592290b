import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import { spkiPin } from '../../../protocol/pins';
import type { PkiBundle } from '../bundle/bundle';
import type { JoinCrypto } from '../issuance/join-crypto';
import { isP256PrivateKey } from '../ca/issuing-ca';
import type { TrustedEncryptionKey, TrustedSigningKey, TrustState } from './trust-state';
import { trustVersionOf } from './bundle-steps';

/** What the trust state is built from: the keys in use (as parsed into `crypto`) and the bundle's rotations. */
type TrustInput = Partial<Pick<PkiBundle, 'servingCa' | 'rotations' | 'trustVersion'>>;

const der64 = (pem: string) => new X509Certificate(pem).raw.toString('base64');

function otherSigningKey(pair: { certificatePem?: string; privateKeyPem: string }): TrustedSigningKey {
  const key = createPrivateKey(pair.privateKeyPem);
  if (!pair.certificatePem || !isP256PrivateKey(key))
    throw new DomainError('INVALID_CONFIG', 'The other join-signing key of the PKI bundle is not usable');
  return { pin: spkiPin(pair.certificatePem), key, certificate: der64(pair.certificatePem) };
}

function otherEncryptionKey(privateKeyPem: string): TrustedEncryptionKey {
  const key = createPrivateKey(privateKeyPem);
  if (!isP256PrivateKey(key)) throw new DomainError('INVALID_CONFIG', 'The other join-encryption key of the PKI bundle is not P-256');
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  return { pin: spkiPin(key), key, jwk: { kty: 'EC', crv: 'P-256', x: String(jwk.x), y: String(jwk.y) } };
}

/**
 * Everything trusted at the bundle's trust version, the key in use first in every list (protocol.md "Trust
 * rotation"): the keys in use are `crypto`'s own objects (so caches keyed on them keep working), the other key
 * of a rotation under way comes second. Built once per version (the PKI source does, when it loads a bundle).
 *
 * @throws DomainError `INVALID_CONFIG` when the other key of a rotation does not parse.
 */
export function buildTrustState(
  input: TrustInput,
  crypto: Pick<
    JoinCrypto,
    | 'signingKey'
    | 'signingKeyPin'
    | 'signingCertificate'
    | 'encryptionKey'
    | 'encryptionKeyPin'
    | 'encryptionPublicJwk'
    | 'nodeCaPin'
    | 'nodeCaCertificate'
    | 'commandTrustBundle'
  >,
): TrustState {
  const rotations = input.rotations ?? {};
  const servingOther = rotations['serving-ca']?.certificatePem;
  const nodeOther = rotations['node-ca']?.certificatePem;
  const signingOther = rotations['join-signing'];
  const encryptionOther = rotations['join-encryption'];
  return {
    version: trustVersionOf(input as PkiBundle),
    // Without a serving CA (a JoinCrypto made from loose keys, in tests) there is no pin to list.
    servingCaPins: [
      ...(input.servingCa ? [spkiPin(input.servingCa.certificatePem)] : []),
      ...(servingOther ? [spkiPin(servingOther)] : []),
    ],
    signingKeys: [
      { pin: crypto.signingKeyPin, key: crypto.signingKey, certificate: crypto.signingCertificate },
      ...(signingOther ? [otherSigningKey(signingOther)] : []),
    ],
    encryptionKeys: [
      { pin: crypto.encryptionKeyPin, key: crypto.encryptionKey, jwk: crypto.encryptionPublicJwk },
      ...(encryptionOther ? [otherEncryptionKey(encryptionOther.privateKeyPem)] : []),
    ],
    nodeCas: [
      { pin: crypto.nodeCaPin, certificate: crypto.nodeCaCertificate },
      ...(nodeOther ? [{ pin: spkiPin(nodeOther), certificate: der64(nodeOther) }] : []),
    ],
    commandTrustBundle: crypto.commandTrustBundle,
  };
}
