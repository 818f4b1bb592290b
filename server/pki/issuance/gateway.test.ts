import { createPrivateKey, X509Certificate as NodeX509 } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../protocol/errors';
import { issueGatewayCertificate } from './gateway';
import { fixturePki, thrownBy } from '../../../test/pki/fixtures';
import { openssl } from '../../../test/pki/openssl';
import * as x509 from '../../../test/pki/x509';

const { bundle } = fixturePki();
const sans = ['gw.eu.example.com', '*.gw.example.com', 'localhost', '10.0.0.7', '2001:db8::1', '::ffff:192.0.2.1'];
const issued = issueGatewayCertificate(bundle, { sans, ttlDays: 30 });

describe('issueGatewayCertificate', () => {
  it('verifies against the serving CA as a TLS server certificate', () => {
    const out = openssl(['verify', '-CAfile', '{ca.pem}', '-purpose', 'sslserver', '{leaf.pem}'], {
      'ca.pem': bundle.servingCa.certificatePem,
      'leaf.pem': issued.certificatePem,
    }).toString();
    expect(out).toContain(': OK');
    expect(() =>
      openssl(['verify', '-CAfile', '{ca.pem}', '{leaf.pem}'], {
        'ca.pem': bundle.nodeCa.certificatePem,
        'leaf.pem': issued.certificatePem,
      }),
    ).toThrow();
  });

  it('writes the names, usages and validity openssl shows', () => {
    const text = openssl(['x509', '-in', '{leaf.pem}', '-noout', '-text'], { 'leaf.pem': issued.certificatePem }).toString();
    expect(text).toContain(
      'DNS:gw.eu.example.com, DNS:*.gw.example.com, DNS:localhost, IP Address:10.0.0.7, IP Address:2001:DB8:0:0:0:0:0:1, IP Address:0:0:0:0:0:FFFF:C000:201',
    );
    expect(text).toContain('TLS Web Server Authentication');
    expect(text).toMatch(/Key Usage: critical\s+Digital Signature/);
    expect(text).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toContain('Subject: CN = Better Compute gateway');
    const cert = new x509.X509Certificate(issued.certificatePem);
    expect(cert.notAfter.getTime() - cert.notBefore.getTime()).toBe(30 * 86_400_000 + 5 * 60_000);
    expect(cert.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(
      new x509.X509Certificate(bundle.servingCa.certificatePem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
  });

  it('returns the key for the leaf and a full chain', () => {
    expect(new NodeX509(issued.certificatePem).checkPrivateKey(createPrivateKey(issued.privateKeyPem))).toBe(true);
    expect(issued.privateKeyPem.startsWith('-----BEGIN PRIVATE KEY-----')).toBe(true);
    expect(issued.chainPem).toBe(issued.certificatePem + new NodeX509(bundle.servingCa.certificatePem).toString());
  });

  it('lowercases and de-duplicates host names', () => {
    const cert = issueGatewayCertificate(bundle, { sans: ['GW.Example.com', 'gw.example.com'] });
    const san = new x509.X509Certificate(cert.certificatePem).getExtension(x509.SubjectAlternativeNameExtension)!;
    expect(san.names.toJSON()).toEqual([{ type: 'dns', value: 'gw.example.com' }]);
  });

  it.each([
    [[], 'at least one'],
    [['https://gw.example.com'], 'scheme'],
    [['gw.example.com:443'], 'port'],
    [['gw_example.com'], 'a-z'],
    [['[2001:db8::1]'], 'brackets'],
    [['fe80::1%eth0'], 'zone'],
    [['gw.*.example.com'], 'a-z'],
    [['256.1.1.1'], 'all-numeric'],
    [[''], 'empty'],
  ])('refuses %j', (bad, why) => {
    const error = thrownBy(() => issueGatewayCertificate(bundle, { sans: bad })) as DomainError;
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'san' });
    expect(error.message).toContain(why);
  });

  it('refuses a lifetime outside 1 to 825 days', () => {
    for (const ttlDays of [0, 826, 1.5]) {
      expect(thrownBy(() => issueGatewayCertificate(bundle, { sans: ['gw.example.com'], ttlDays }))).toMatchObject({ field: 'ttlDays' });
    }
  });
});
