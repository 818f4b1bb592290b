import { createCipheriv, createPrivateKey, createPublicKey, randomBytes, scryptSync, X509Certificate } from 'node:crypto';
import type { PkiBundle } from '../../server/pki/bundle/bundle';
import { issueLeaf } from '../../server/pki/ca/ca';
import { loadIssuingCa } from '../../server/pki/ca/issuing-ca';
import { encodeName, OIDS, toPem } from '../../server/pki/ca/x509-build';

/**
 * `bundle` as releases before the self-signed signing certificate made it: the JoinService signing key's
 * certificate issued by `issuer`'s node CA (the bundle's own by default), same key, same validity.
 */
export function withNodeCaIssuedSigningCertificate(bundle: PkiBundle, issuer: PkiBundle = bundle): PkiBundle {
  const ca = loadIssuingCa(issuer.nodeCa, 'node CA');
  const current = new X509Certificate(bundle.signingKey.certificatePem);
  const der = issueLeaf(ca, {
    subject: encodeName([[OIDS.commonName, 'Better Compute JoinService signing key']]),
    spkiDer: createPublicKey(createPrivateKey(bundle.signingKey.privateKeyPem)).export({ type: 'spki', format: 'der' }),
    notBefore: new Date(Date.parse(current.validFrom)),
    notAfter: new Date(Date.parse(current.validTo)),
  });
  return { ...bundle, signingKey: { ...bundle.signingKey, certificatePem: toPem(der) } };
}

/**
 * A version 1 sealed bundle, byte for byte as older releases wrote it: `"BCPKI1" | salt | iv | tag |
 * ciphertext`, scrypt N=2^15, r=8, p=1, the header as GCM additional data. No secret rule: old installs
 * accepted 16 characters.
 */
export function sealPkiBundleV1(bundle: PkiBundle, secret: string): Buffer {
  const header = Buffer.concat([Buffer.from('BCPKI1', 'latin1'), randomBytes(16), randomBytes(12)]);
  const key = scryptSync(Buffer.from(secret, 'utf8'), header.subarray(6, 22), 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
  const cipher = createCipheriv('aes-256-gcm', key, header.subarray(22), { authTagLength: 16 });
  cipher.setAAD(header);
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(bundle), 'utf8'), cipher.final()]);
  return Buffer.concat([header, cipher.getAuthTag(), ciphertext]);
}
