import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DerError } from './der/reader';
import { readLeafNames } from './certificate-names';

function opensslCertificate(subject: string, extensions: string[]): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'leaf-'));
  const key = path.join(dir, 'k.pem');
  const out = path.join(dir, 'c.der');
  execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  execFileSync('openssl', [
    'req',
    '-new',
    '-x509',
    '-key',
    key,
    '-subj',
    subject,
    '-days',
    '1',
    '-outform',
    'DER',
    '-out',
    out,
    ...extensions.flatMap((extension) => ['-addext', extension]),
  ]);
  return readFileSync(out);
}

describe('readLeafNames', () => {
  it('reads the key, URI SANs in order and OUs of a certificate OpenSSL made', () => {
    const der = opensslCertificate('/O=x/OU=bc-role:node/CN=node_1', [
      'subjectAltName=URI:spiffe://compute.example.com/site/s/node/n,DNS:ignored.example,URI:urn:bc:tpm-ak:sha256:ab',
      'keyUsage=critical,digitalSignature',
    ]);
    const names = readLeafNames(der);
    expect(names.spkiDer.equals(new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' }))).toBe(true);
    expect(names.uris).toEqual(['spiffe://compute.example.com/site/s/node/n', 'urn:bc:tpm-ak:sha256:ab']);
    expect(names.organizationalUnits).toEqual(['bc-role:node']);
  });

  it('reads a certificate without extensions', () => {
    const der = opensslCertificate('/CN=plain', ['basicConstraints=CA:FALSE']);
    expect(readLeafNames(der)).toMatchObject({ uris: [], organizationalUnits: [] });
  });

  it('refuses what is not one DER certificate', () => {
    const der = opensslCertificate('/CN=plain', ['basicConstraints=CA:FALSE']);
    expect(() => readLeafNames(Buffer.concat([der, Buffer.from([0])]))).toThrow(DerError);
    expect(() => readLeafNames(der.subarray(0, 100))).toThrow(DerError);
    expect(() => readLeafNames(Buffer.from('3000', 'hex'))).toThrow(DerError);
  });
});
