import { createPrivateKey, X509Certificate as NodeX509 } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../protocol/errors';
import { createPkiBundle, PKI_VALIDITY_DAYS } from './bundle';
import { parsePkiBundle } from './bundle-schema';
import { openssl } from '../../../test/pki/openssl';
import * as x509 from '../../../test/pki/x509';
import { withNodeCaIssuedSigningCertificate } from '../../../test/pki/legacy';

const now = new Date('2026-03-01T12:00:00.678Z');
const bundle = createPkiBundle({ trustDomain: 'compute.example.com', now });

function caChecks(pem: string, commonName: string) {
  const cert = new x509.X509Certificate(pem);
  expect(cert.subject).toBe(`CN=${commonName}`);
  expect(cert.issuer).toBe(cert.subject);
  expect(cert.notBefore.toISOString()).toBe('2026-03-01T11:00:00.000Z');
  expect(cert.notAfter.getTime() - cert.notBefore.getTime()).toBe(PKI_VALIDITY_DAYS * 86_400_000);
  const basic = cert.getExtension(x509.BasicConstraintsExtension)!;
  expect([basic.critical, basic.ca, basic.pathLength]).toEqual([true, true, 0]);
  const usage = cert.getExtension(x509.KeyUsagesExtension)!;
  expect(usage.critical).toBe(true);
  expect(usage.usages).toBe(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
  expect(cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toMatch(/^[0-9a-f]{40}$/);
  expect(cert.signatureAlgorithm).toMatchObject({ name: 'ECDSA', hash: { name: 'SHA-256' } });
  expect((cert.publicKey.algorithm as EcKeyAlgorithm).namedCurve).toBe('P-256');
  expect(BigInt(`0x${cert.serialNumber}`) > 0n).toBe(true);
  expect(new NodeX509(pem).checkPrivateKey(createPrivateKey(keyOf(pem)))).toBe(true);
}

const keyOf = (certificatePem: string) =>
  [bundle.nodeCa, bundle.servingCa, bundle.commandCa, bundle.signingKey].find((pair) => pair.certificatePem === certificatePem)!
    .privateKeyPem;

describe('createPkiBundle', () => {
  it('is plain JSON of version 1 that survives a round trip and its own schema', () => {
    expect(bundle.version).toBe(1);
    expect(bundle.trustDomain).toBe('compute.example.com');
    expect(bundle.createdAt).toBe('2026-03-01T12:00:00.678Z');
    const copy = JSON.parse(JSON.stringify(bundle));
    expect(copy).toEqual(bundle);
    expect(parsePkiBundle(copy)).toEqual(bundle);
    expect(Object.keys(bundle).sort()).toEqual(
      [
        'commandCa',
        'commandTrustBundle',
        'createdAt',
        'encryptionKey',
        'nodeCa',
        'servingCa',
        'signingKey',
        'trustDomain',
        'version',
      ].sort(),
    );
  });

  it('makes three P-256 roots that are CAs for leaves only', () => {
    caChecks(bundle.nodeCa.certificatePem, 'Better Compute node CA');
    caChecks(bundle.servingCa.certificatePem, 'Better Compute serving CA');
    caChecks(bundle.commandCa.certificatePem, 'Better Compute command-signing CA');
    const text = openssl(['x509', '-in', '{ca.pem}', '-noout', '-text'], { 'ca.pem': bundle.nodeCa.certificatePem }).toString();
    expect(text).toContain('CA:TRUE, pathlen:0');
    expect(text).toContain('Certificate Sign, CRL Sign');
    expect(text).toContain('ecdsa-with-SHA256');
    expect(text).toContain('NIST CURVE: P-256');
  });

  it('exposes the command CA as the command trust bundle', () => {
    expect(bundle.commandTrustBundle).toEqual([new NodeX509(bundle.commandCa.certificatePem).raw.toString('base64')]);
  });

  it('certifies the JoinService signing key self-signed, as a leaf for signatures that no node CA vouches for', () => {
    const cert = new x509.X509Certificate(bundle.signingKey.certificatePem);
    const ca = new x509.X509Certificate(bundle.nodeCa.certificatePem);
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.issuer).not.toBe(ca.subject);
    expect(new NodeX509(bundle.signingKey.certificatePem).verify(new NodeX509(bundle.signingKey.certificatePem).publicKey)).toBe(true);
    expect(cert.getExtension(x509.BasicConstraintsExtension)).toMatchObject({ ca: false, critical: true });
    expect(cert.getExtension(x509.KeyUsagesExtension)).toMatchObject({ usages: x509.KeyUsageFlags.digitalSignature, critical: true });
    // It can never pass as a node's TLS client certificate at the gateway, which trusts the node CA.
    expect(() =>
      openssl(['verify', '-purpose', 'sslclient', '-CAfile', '{ca.pem}', '{leaf.pem}'], {
        'ca.pem': bundle.nodeCa.certificatePem,
        'leaf.pem': bundle.signingKey.certificatePem,
      }),
    ).toThrow(/unable to get local issuer certificate|self-signed certificate/);
  });

  it('a bundle from before (node-CA-issued signing certificate) did pass as a TLS client certificate: what the rotation removes', () => {
    const legacy = withNodeCaIssuedSigningCertificate(bundle);
    const verified = openssl(['verify', '-purpose', 'sslclient', '-CAfile', '{ca.pem}', '{leaf.pem}'], {
      'ca.pem': legacy.nodeCa.certificatePem,
      'leaf.pem': legacy.signingKey.certificatePem,
    }).toString();
    expect(verified).toContain(': OK');
  });

  it('uses a distinct P-256 key for every role', () => {
    const pems = [bundle.nodeCa, bundle.servingCa, bundle.commandCa, bundle.signingKey, bundle.encryptionKey].map(
      (pair) => pair.privateKeyPem,
    );
    expect(new Set(pems).size).toBe(5);
    for (const pem of pems) {
      expect(pem.startsWith('-----BEGIN PRIVATE KEY-----')).toBe(true);
      expect(createPrivateKey(pem).asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    }
  });

  it('refuses a bad trust domain', () => {
    expect(() => createPkiBundle({ trustDomain: 'Compute.Example.com' })).toThrow(DomainError);
    expect(() => createPkiBundle({ trustDomain: 'localhost' })).toThrow(/^trustDomain: /);
  });
});

describe('parsePkiBundle', () => {
  it('names the bad field without echoing its value', () => {
    const broken = { ...bundle, signingKey: { ...bundle.signingKey, privateKeyPem: 'secret-looking-value' } };
    const error = (() => {
      try {
        parsePkiBundle(broken);
      } catch (e) {
        return e as DomainError;
      }
    })()!;
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain('signingKey.privateKeyPem');
    expect(error.message).not.toContain('secret-looking-value');
    expect(() => parsePkiBundle({ ...bundle, version: 2 })).toThrow(/version/);
  });
});
