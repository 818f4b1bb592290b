import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { signEnvelope, type SignedEnvelope } from '../protocol/envelope';
import { spkiPin } from '../protocol/pins';
import { createPkiBundle, type PkiBundle } from '../server/pki/bundle/bundle';
import { installPins } from '../server/pki/pins-summary';

/** One generation of the keys an agent trusts, from a real PKI bundle, with its pins and public forms. */
export interface TrustGeneration {
  bundle: PkiBundle;
  servingCaPin: string;
  signingPin: string;
  encryptionPin: string;
  signingKey: KeyObject;
  signingCertificate: string;
  encryptionJwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string };
}

export function trustGeneration(trustDomain = 'rotation.example.com'): TrustGeneration {
  const bundle = createPkiBundle({ trustDomain });
  const pins = installPins(bundle);
  const { x, y } = createPublicKey(bundle.encryptionKey.privateKeyPem).export({ format: 'jwk' }) as { x: string; y: string };
  return {
    bundle,
    servingCaPin: pins.servingCaPin,
    signingPin: pins.joinSigningKeyPin,
    encryptionPin: pins.joinEncryptionKeyPin,
    signingKey: createPrivateKey(bundle.signingKey.privateKeyPem),
    signingCertificate: Buffer.from(bundle.signingKey.certificatePem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64').toString('base64'),
    encryptionJwk: { kty: 'EC', crv: 'P-256', x, y },
  };
}

/** The trust set body of protocol.md "Trust rotation" for `nodeId`, trusting every generation given (first in use). */
export function trustBody(nodeId: string, version: number, generations: TrustGeneration[]) {
  return {
    status: 'trust',
    nodeId,
    version,
    servingCaPins: generations.map((g) => g.servingCaPin),
    joinSigningKeyPins: generations.map((g) => g.signingPin),
    joinEncryptionKeyPins: generations.map((g) => g.encryptionPin),
    joinEncryptionJwks: generations.map((g) => g.encryptionJwk),
    commandTrustBundle: generations.flatMap((g) => g.bundle.commandTrustBundle),
  };
}

/** A signed envelope of `body`: `sig` by the first signer, and `sigs` by every signer when there are several. */
export function signedBy(body: object, signers: TrustGeneration[]): SignedEnvelope & { sigs?: { pin: string; sig: string }[] } {
  const envelope = signEnvelope(body, signers[0]!.signingKey);
  if (signers.length < 2) return envelope;
  const bytes = Buffer.from(envelope.body, 'base64url');
  return {
    ...envelope,
    sigs: signers.map((g) => ({
      pin: spkiPin(g.signingKey),
      sig: sign('sha256', bytes, { key: g.signingKey, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
    })),
  };
}
