import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spkiPin } from '../../../protocol/pins';
import { createPkiBundle } from '../bundle/bundle';
import { parsePkiBundle } from '../bundle/bundle-schema';
import { issueGatewayCertificate } from '../issuance/gateway';
import { pkiRuntimeOf } from '../../join/join-runtime';
import { activateInBundle, prepareInBundle, retireInBundle } from './bundle-steps';
import { servingCaChainOf } from './cross-certificate';
import { makeRotatingKey } from './new-key';

// While a serving CA rotation is active the old CA certifies the new one, and the gateways send that
// cross-certificate and the old CA after their leaf: a machine that pins only the old CA accepts the chain until
// the retirement, one that pins the new CA stops at the certificate after the leaf.

const initial = createPkiBundle({ trustDomain: 'cross.example.com' });
const prepared = prepareInBundle(initial, 'serving-ca', makeRotatingKey('serving-ca'));
const active = activateInBundle(prepared, 'serving-ca');
const retired = retireInBundle(active, 'serving-ca');
const oldCa = new X509Certificate(initial.servingCa.certificatePem);
const newCa = new X509Certificate(active.servingCa.certificatePem);
const pems = (text: string) => text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g)!;

describe('the serving CA cross-certificate', () => {
  it('is made at activation: the new CA subject, key and constraints, issued and signed by the old CA', () => {
    const crossPem = active.rotations!['serving-ca']!.crossCertificatePem!;
    expect(crossPem).toBeDefined();
    const cross = new X509Certificate(crossPem);
    expect(cross.subject).toBe(newCa.subject);
    expect(cross.issuer).toBe(oldCa.subject);
    expect(cross.publicKey.equals(newCa.publicKey)).toBe(true);
    expect(cross.ca).toBe(true);
    expect(cross.checkIssued(oldCa)).toBe(true);
    expect(cross.verify(oldCa.publicKey)).toBe(true);
    expect(Date.parse(cross.validFrom)).toBeGreaterThanOrEqual(Date.parse(oldCa.validFrom));
    expect(Date.parse(cross.validTo)).toBeLessThanOrEqual(Date.parse(oldCa.validTo));
    const text = execFileSync('openssl', ['x509', '-noout', '-text'], { input: crossPem }).toString();
    expect(text).toMatch(/CA:TRUE, pathlen:0/);
    // The bundle keeps it, sealed with the rest.
    expect(parsePkiBundle(JSON.parse(JSON.stringify(active))).rotations!['serving-ca']!.crossCertificatePem).toBe(crossPem);
  });

  it('follows the leaf from --activate until --retire only', () => {
    expect(servingCaChainOf(initial)).toEqual([initial.servingCa.certificatePem]);
    expect(servingCaChainOf(prepared)).toEqual([initial.servingCa.certificatePem]);
    expect(servingCaChainOf(active)).toEqual([active.rotations!['serving-ca']!.crossCertificatePem, initial.servingCa.certificatePem]);
    expect(pkiRuntimeOf(active).servingCaChain).toEqual(servingCaChainOf(active));
    expect(servingCaChainOf(retired)).toEqual([active.servingCa.certificatePem]);
    // A cross-certificate that does not certify the serving CA in use is not sent.
    const other = activateInBundle(prepareInBundle(initial, 'serving-ca', makeRotatingKey('serving-ca')), 'serving-ca');
    const mixed = {
      ...active,
      rotations: {
        'serving-ca': { ...active.rotations!['serving-ca']!, crossCertificatePem: other.rotations!['serving-ca']!.crossCertificatePem },
      },
    };
    expect(servingCaChainOf(mixed)).toEqual([active.servingCa.certificatePem]);
  });

  it('makes a gateway chain that OpenSSL verifies with either CA as the only trust anchor', () => {
    const cert = issueGatewayCertificate(active, { sans: ['127.0.0.1'] });
    const [leaf, cross, previous] = pems(cert.chainPem);
    expect(pems(cert.chainPem)).toHaveLength(3);
    expect(spkiPin(new X509Certificate(cross!).publicKey)).toBe(spkiPin(newCa.publicKey));
    expect(new X509Certificate(previous!).raw.equals(oldCa.raw)).toBe(true);
    const dir = mkdtempSync(path.join(tmpdir(), 'cross-'));
    const file = (name: string, text: string) => (writeFileSync(path.join(dir, name), text), path.join(dir, name));
    const leafFile = file('leaf.pem', leaf!);
    const untrusted = file('untrusted.pem', cross! + previous!);
    for (const anchor of [initial.servingCa.certificatePem, active.servingCa.certificatePem]) {
      const out = execFileSync('openssl', ['verify', '-CAfile', file('ca.pem', anchor), '-untrusted', untrusted, leafFile]).toString();
      expect(out).toMatch(/: OK/);
    }
  });
});
