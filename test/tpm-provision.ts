import { webcrypto } from 'node:crypto';
import type { TpmClient } from '../agent/tpm/client';
import { PASSWORD } from '../agent/tpm/client';
import { CC, EK_CERT_NV_INDEX, PT, RH } from '../protocol/tpm/constants';
import { TpmWriter } from '../protocol/tpm/marshal';
import type { EkKind } from '../agent/tpm/templates';
import * as x509 from './pki/x509';

const crypto = webcrypto as unknown as Crypto;
const ECDSA = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

// TPMA_NV: OWNERWRITE, AUTHWRITE, OWNERREAD, AUTHREAD, NO_DA (an ordinary index, as a manufacturer's would read).
const NV_ATTRIBUTES = (1 << 1) | (1 << 2) | (1 << 17) | (1 << 18) | (1 << 25);

/**
 * Writes `der` into the EK certificate NV index of `kind`, as a TPM manufacturer does (swtpm_setup makes only
 * RSA-2048 and P-384 certificates, so a test makes its own for either of the two default EKs).
 */
export async function writeEkCertificate(tpm: TpmClient, kind: EkKind, der: Buffer): Promise<void> {
  const index = kind === 'rsa' ? EK_CERT_NV_INDEX.rsa2048 : EK_CERT_NV_INDEX.eccP256;
  const nvPublic = new TpmWriter().u32(index).u16(0x000b).u32(NV_ATTRIBUTES).sized(Buffer.alloc(0)).u16(der.length).toBuffer();
  await tpm.execute(
    'NV_DefineSpace',
    CC.nvDefineSpace,
    [RH.owner],
    [PASSWORD],
    new TpmWriter().sized(Buffer.alloc(0)).sized(nvPublic).toBuffer(),
  );
  const chunk = (await tpm.getProperty(PT.nvBufferMax)) ?? 512;
  for (let offset = 0; offset < der.length; offset += chunk) {
    const params = new TpmWriter()
      .sized(der.subarray(offset, offset + chunk))
      .u16(offset)
      .toBuffer();
    await tpm.execute('NV_Write', CC.nvWrite, [index, index], [PASSWORD], params);
  }
}

export type EkIssuer = Awaited<ReturnType<typeof createEkRoot>>;

/** A vendor root CA for EK certificates (ECDSA P-256, self-signed), as a PEM and its signing key. */
export async function createEkRoot(name = 'CN=Test TPM Vendor Root,O=Better Compute Tests') {
  const keys = (await crypto.subtle.generateKey(ECDSA, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      name,
      keys,
      serialNumber: '01',
      notBefore: new Date(Date.now() - 86_400_000),
      notAfter: new Date(Date.now() + 10 * 365 * 86_400_000),
      signingAlgorithm: ECDSA,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      ],
    },
    crypto,
  );
  return { pem: cert.toString('pem'), cert, keys };
}

/** A vendor intermediate CA issued by `root` (vendors put one or two between their root and the EK). */
export async function createEkIntermediate(root: EkIssuer, name = 'CN=Test TPM Vendor Intermediate'): Promise<EkIssuer> {
  const keys = (await crypto.subtle.generateKey(ECDSA, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: '02',
      subject: name,
      issuer: root.cert.subject,
      notBefore: new Date(Date.now() - 86_400_000),
      notAfter: new Date(Date.now() + 5 * 365 * 86_400_000),
      signingAlgorithm: ECDSA,
      publicKey: keys.publicKey,
      signingKey: root.keys.privateKey,
      extensions: [new x509.BasicConstraintsExtension(true, 0, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
    },
    crypto,
  );
  return { pem: cert.toString('pem'), cert, keys };
}

/**
 * An EK certificate for the EK whose DER SubjectPublicKeyInfo is `ekSpki`, issued by `root`, with the TCG
 * profile's empty subject and critical SAN left out (node:crypto reads either way; the issuer is what matters).
 */
export async function issueEkCertificate(
  root: EkIssuer,
  ekSpki: Buffer,
  kind: EkKind,
  validity: { notBefore?: Date; notAfter?: Date } = {},
): Promise<Buffer> {
  const algorithm = kind === 'rsa' ? { name: 'RSA-OAEP', hash: 'SHA-256' } : { name: 'ECDH', namedCurve: 'P-256' };
  const publicKey = await crypto.subtle.importKey('spki', new Uint8Array(ekSpki), algorithm, true, kind === 'rsa' ? ['encrypt'] : []);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: '0badc0de',
      subject: 'CN=TPM EK',
      issuer: root.cert.subject,
      notBefore: validity.notBefore ?? new Date(Date.now() - 3_600_000),
      notAfter: validity.notAfter ?? new Date(Date.now() + 365 * 86_400_000),
      signingAlgorithm: ECDSA,
      publicKey,
      signingKey: root.keys.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyEncipherment, true),
      ],
    },
    crypto,
  );
  return Buffer.from(cert.rawData);
}
