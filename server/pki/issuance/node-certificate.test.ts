import { createHash, generateKeyPairSync, X509Certificate as NodeX509 } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readChildren, readRoot, type DerElement } from '../../../protocol/der/reader';
import { DomainError } from '../../../protocol/errors';
import { issueNodeCertificate, NODE_CERT_BACKDATE_SECONDS, type NodeCertificateRequest } from './node-certificate';
import { createPkiBundle } from '../bundle/bundle';
import { joinCryptoFromBundle } from './join-crypto';
import { fixturePki, thrownBy } from '../../../test/pki/fixtures';
import { openssl } from '../../../test/pki/openssl';
import * as x509 from '../../../test/pki/x509';
import { toPem } from '../ca/x509-build';

const { bundle, joinCrypto } = fixturePki();
const ca = joinCrypto.nodeCa;
const caCert = new x509.X509Certificate(bundle.nodeCa.certificatePem);
const nodeKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'der' });
const base: NodeCertificateRequest = {
  publicKeySpkiDer: nodeKey,
  trustDomain: 'compute.example.com',
  siteId: 'site_01k5w0000000000000000000aa',
  nodeId: 'node_01k5w0000000000000000000bb',
  role: 'node',
  notBefore: new Date(Date.now() - 60_000),
  ttlSeconds: 86_400,
};
const spiffeId = `spiffe://compute.example.com/site/${base.siteId}/node/${base.nodeId}`;
const parse = (der: Buffer) => new x509.X509Certificate(new Uint8Array(der));
const issue = (changes: Partial<NodeCertificateRequest> = {}) => issueNodeCertificate(ca, { ...base, ...changes });

/** Every OID and every string in a DER tree, looking inside OCTET STRINGs that hold DER (extension values). */
function walk(der: Buffer, node: DerElement = readRoot(der), found = { oids: [] as string[], strings: [] as string[] }) {
  const content = der.subarray(node.contentStart, node.end);
  if (node.tag === 0x06) found.oids.push(content.toString('hex'));
  else if ([0x0c, 0x13, 0x16, 0x86].includes(node.tag)) found.strings.push(content.toString('latin1'));
  else if (node.tag & 0x20) for (const child of readChildren(der, node)) walk(der, child, found);
  else if (node.tag === 0x04) {
    try {
      walk(content, readRoot(content), found);
    } catch {
      // not DER inside: a key identifier
    }
  }
  return found;
}

describe('issueNodeCertificate', () => {
  const issued = issue({ extraUris: ['urn:bc:tpm-ak:sha256:0123abcd'] });
  const pem = toPem(issued.der);
  const cert = parse(issued.der);

  it('writes every field of the profile', async () => {
    expect(cert.serialNumber).toBe(issued.serialHex);
    expect(issued.serialHex).toMatch(/^(0[1-9a-f]|[1-7][0-9a-f])[0-9a-f]{30}$/);
    expect(cert.issuer).toBe(caCert.subject);
    expect(cert.subjectName.toJSON()).toEqual([{ OU: ['bc-role:node'] }]);
    // Backdated from the issuance for agents whose clock runs behind, inside the lifetime: notAfter − notBefore is
    // the ttl (protocol.md "Valid for"), so a one-day certificate ends before a day after its issuance.
    const issuance = Math.floor(base.notBefore.getTime() / 1000) * 1000;
    expect(cert.notBefore).toEqual(new Date(issuance - NODE_CERT_BACKDATE_SECONDS * 1000));
    expect(cert.notBefore).toEqual(issued.notBefore);
    expect(cert.notAfter).toEqual(issued.notAfter);
    expect(issued.notAfter.getTime() - issued.notBefore.getTime()).toBe(86_400_000);
    expect(issued.notAfter.getTime()).toBe(issuance + 86_400_000 - NODE_CERT_BACKDATE_SECONDS * 1000);
    expect(NODE_CERT_BACKDATE_SECONDS).toBeGreaterThanOrEqual(60);
    expect(NODE_CERT_BACKDATE_SECONDS).toBeLessThanOrEqual(300);
    expect(Buffer.from(cert.publicKey.rawData).equals(nodeKey)).toBe(true);
    expect(cert.signatureAlgorithm).toMatchObject({ name: 'ECDSA', hash: { name: 'SHA-256' } });
    expect(await cert.verify({ publicKey: caCert.publicKey, signatureOnly: true })).toBe(true);

    expect(cert.extensions.map((e) => e.type).sort()).toEqual([
      '2.5.29.14',
      '2.5.29.15',
      '2.5.29.17',
      '2.5.29.19',
      '2.5.29.35',
      '2.5.29.37',
    ]);
    expect(cert.getExtension(x509.BasicConstraintsExtension)).toMatchObject({ ca: false, critical: true });
    expect(cert.getExtension(x509.KeyUsagesExtension)).toMatchObject({ usages: x509.KeyUsageFlags.digitalSignature, critical: true });
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)).toMatchObject({
      usages: [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
      critical: false,
    });
    expect(cert.getExtension(x509.SubjectAlternativeNameExtension)!.names.toJSON()).toEqual([
      { type: 'url', value: spiffeId },
      { type: 'url', value: 'urn:bc:tpm-ak:sha256:0123abcd' },
    ]);
    expect(issued.spiffeId).toBe(spiffeId);
    expect(cert.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(
      caCert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
    expect(cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toBe(
      createHash('sha1').update(nodeKey.subarray(26)).digest('hex'),
    );
  });

  it('carries no private-arc OID and no string but the role and the URIs', () => {
    const { oids, strings } = walk(issued.der);
    expect(oids.filter((oid) => oid.startsWith('2b06010401'))).toEqual([]);
    expect(strings).toEqual(['Better Compute node CA', 'bc-role:node', spiffeId, 'urn:bc:tpm-ak:sha256:0123abcd']);
  });

  it('verifies with node:crypto and with openssl as a TLS client and as a TLS server certificate', () => {
    const nodeCert = new NodeX509(issued.der);
    expect(nodeCert.checkIssued(new NodeX509(ca.certDer))).toBe(true);
    expect(nodeCert.verify(new NodeX509(ca.certDer).publicKey)).toBe(true);
    const out = openssl(['verify', '-CAfile', '{ca.pem}', '-purpose', 'sslclient', '-x509_strict', '{leaf.pem}'], {
      'ca.pem': bundle.nodeCa.certificatePem,
      'leaf.pem': pem,
    }).toString();
    expect(out).toContain(': OK');
    const server = openssl(['verify', '-CAfile', '{ca.pem}', '-purpose', 'sslserver', '-x509_strict', '{leaf.pem}'], {
      'ca.pem': bundle.nodeCa.certificatePem,
      'leaf.pem': pem,
    }).toString();
    expect(server).toContain(': OK');
  });

  it('never outlives the issuing CA, and a CA past its notAfter issues nothing', () => {
    const caNotAfter = new NodeX509(ca.certDer).validTo;
    const end = Date.parse(caNotAfter);
    const late = issue({ notBefore: new Date(end - 3_600_000), ttlSeconds: 86_400 });
    expect(late.notAfter.getTime()).toBe(end);
    expect(parse(late.der).notAfter.getTime()).toBe(end);
    expect(
      openssl(['x509', '-in', '{leaf.pem}', '-noout', '-enddate'], { 'leaf.pem': toPem(late.der) })
        .toString()
        .trim(),
    ).toBe(`notAfter=${caNotAfter}`);
    expect(thrownBy(() => issue({ notBefore: new Date(end) }))).toMatchObject({
      code: 'INVALID_CONFIG',
      message: 'The node CA has expired: it can issue no certificate',
    });
  });

  it('starts early enough for an agent whose clock runs a few minutes behind (openssl verify at its time)', () => {
    const now = new Date();
    const fresh = issue({ notBefore: now });
    const behind = String(Math.floor(now.getTime() / 1000) - 240);
    const out = openssl(['verify', '-attime', behind, '-CAfile', '{ca.pem}', '-purpose', 'sslclient', '{leaf.pem}'], {
      'ca.pem': bundle.nodeCa.certificatePem,
      'leaf.pem': toPem(fresh.der),
    }).toString();
    expect(out).toContain(': OK');
  });

  it('reads as intended in openssl x509 -text', () => {
    const text = openssl(['x509', '-in', '{leaf.pem}', '-noout', '-text'], { 'leaf.pem': pem }).toString();
    expect(text).toContain('Version: 3 (0x2)');
    expect(text).toContain('Subject: OU = bc-role:node');
    expect(text).toContain(`URI:${spiffeId}, URI:urn:bc:tpm-ak:sha256:0123abcd`);
    expect(text).toMatch(/Key Usage: critical\s+Digital Signature\n/);
    expect(text).toMatch(/Extended Key Usage: \s+TLS Web Server Authentication, TLS Web Client Authentication\n/);
    expect(text).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    const date = (d: Date) =>
      d
        .toUTCString()
        .replace(
          /^\w+, (\d+) (\w+) (\d+) ([\d:]+) GMT$/,
          (_, day, mon, year, hms) => `${mon} ${String(Number(day)).padStart(2, ' ')} ${hms} ${year} GMT`,
        );
    expect(text).toContain(`Not Before: ${date(issued.notBefore)}`);
    expect(text).toContain(`Not After : ${date(issued.notAfter)}`);
    expect(text).toContain('ASN1 OID: prime256v1');
  });

  it('counts the backdate inside the lifetime: notAfter − notBefore is ttlSeconds for every role and length', () => {
    const issuance = Math.floor(base.notBefore.getTime() / 1000) * 1000;
    for (const [role, ttlSeconds, backdate] of [
      ['node', 86_400, 300],
      ['ramdisk', 7_200, 300],
      ['node', 3_000, 300],
      ['node', 60, 6],
      ['ramdisk', 9, 0],
    ] as const) {
      const c = issue({ role, ttlSeconds });
      expect(c.notAfter.getTime() - c.notBefore.getTime()).toBe(ttlSeconds * 1000);
      // The backdate is five minutes, or a tenth of a short lifetime so that most of it lies after the issuance.
      expect(c.notBefore.getTime()).toBe(issuance - backdate * 1000);
      expect(parse(c.der).notAfter).toEqual(c.notAfter);
    }
  });

  it('writes each role as its OU, and gives ramdisks at most two hours', () => {
    for (const role of ['node', 'site', 'ramdisk', 'node-tenant'] as const) {
      const c = parse(issue({ role, ttlSeconds: 7_200 }).der);
      expect(c.subject).toBe(`OU=bc-role:${role}`);
    }
    expect(thrownBy(() => issue({ role: 'ramdisk', ttlSeconds: 7_201 }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
    for (const ttlSeconds of [0, -1, 1.5, 86_401, Number.NaN]) {
      expect(thrownBy(() => issue({ ttlSeconds }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
    }
    expect(thrownBy(() => issue({ role: 'admin' as never }))).toMatchObject({ field: 'role' });
  });

  it('makes unique positive 16-octet serials, or uses the one given', () => {
    const serials = new Set(Array.from({ length: 2_000 }, () => issue().serialHex));
    expect(serials.size).toBe(2_000);
    for (const serial of serials) expect(parseInt(serial.slice(0, 2), 16)).toBeGreaterThanOrEqual(1);
    for (const serial of serials) expect(parseInt(serial.slice(0, 2), 16)).toBeLessThanOrEqual(0x7f);
    const given = Buffer.from('7f'.padEnd(40, 'e'), 'hex');
    const withSerial = issue({ serial: given });
    expect(withSerial.serialHex).toBe(given.toString('hex'));
    expect(parse(withSerial.der).serialNumber).toBe(given.toString('hex'));
    for (const bad of [Buffer.alloc(0), Buffer.alloc(21, 1), Buffer.from([0x80, 1]), Buffer.from([0, 1])]) {
      expect(thrownBy(() => issue({ serial: bad }))).toMatchObject({ field: 'serial' });
    }
  });

  it('refuses any key that is not an uncompressed P-256 point', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' });
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).publicKey.export({ type: 'spki', format: 'der' });
    const ed = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
    const point = nodeKey.subarray(26);
    const compressed = Buffer.concat([
      Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex'),
      Buffer.from([2 + (point[64]! & 1)]),
      point.subarray(1, 33),
    ]);
    expect(() => openssl(['pkey', '-pubin', '-inform', 'der', '-noout'], {}, compressed)).not.toThrow();
    const offCurve = Buffer.from(nodeKey);
    offCurve[90]! ^= 1;
    for (const key of [rsa, p384, ed, compressed, offCurve, nodeKey.subarray(0, 90), Buffer.alloc(91)]) {
      const error = thrownBy(() => issue({ publicKeySpkiDer: key })) as DomainError;
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'publicKeySpkiDer' });
    }
  });

  it('allows only urn:bc: statements after the SPIFFE ID', () => {
    for (const extraUris of [[spiffeId], ['https://example.com'], ['urn:other:x'], ['urn:bc:'], ['urn:bc:a b'], ['urn:bc:x', 'urn:bc:x']]) {
      expect(thrownBy(() => issue({ extraUris }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'extraUris' });
    }
  });

  it('refuses names that would change the SPIFFE ID', () => {
    for (const siteId of ['', 'a/b', '..', 'site?x', 'x'.repeat(129)])
      expect(thrownBy(() => issue({ siteId }))).toMatchObject({ field: 'siteId' });
    expect(thrownBy(() => issue({ nodeId: 'node#1' }))).toMatchObject({ field: 'nodeId' });
    expect(thrownBy(() => issue({ trustDomain: 'Compute.example.com' }))).toMatchObject({ field: 'trustDomain' });
    expect(thrownBy(() => issue({ notBefore: new Date(Number.NaN) }))).toMatchObject({ field: 'notBefore' });
  });

  it('switches to GeneralizedTime from 2050, as RFC 5280 requires', () => {
    // A node CA valid across 2050 (certificates never outlive their CA).
    const across2050 = joinCryptoFromBundle(
      createPkiBundle({ trustDomain: 'compute.example.com', now: new Date('2045-01-01T00:00:00Z') }),
    ).nodeCa;
    const late = issueNodeCertificate(across2050, { ...base, notBefore: new Date('2049-12-31T23:35:00.999Z'), ttlSeconds: 3_600 });
    const c = parse(late.der);
    expect(c.notBefore.toISOString()).toBe('2049-12-31T23:30:00.000Z');
    expect(c.notAfter.toISOString()).toBe('2050-01-01T00:30:00.000Z');
    expect(late.der.includes(Buffer.from('491231233000Z'))).toBe(true);
    expect(late.der.includes(Buffer.from('20500101003000Z'))).toBe(true);
  });

  it('takes the CA as a fresh object each time, and refuses a CA whose parts disagree', () => {
    expect(() => issueNodeCertificate({ key: ca.key, certDer: Buffer.from(ca.certDer) }, base)).not.toThrow();
    const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    expect(thrownBy(() => issueNodeCertificate({ key: other, certDer: ca.certDer }, base))).toMatchObject({ code: 'INVALID_CONFIG' });
    expect(thrownBy(() => issueNodeCertificate({ ...ca, subjectDer: Buffer.from('3000', 'hex') }, base))).toMatchObject({
      code: 'INVALID_CONFIG',
    });
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    expect(thrownBy(() => issueNodeCertificate({ key: rsa, certDer: ca.certDer }, base))).toMatchObject({ code: 'INVALID_CONFIG' });
  });
});
