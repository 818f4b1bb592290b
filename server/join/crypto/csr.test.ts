import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCsr, generateNodeKeyAndCsr } from '../../../agent/keys';
import { tlv } from '../../../protocol/der/writer';
import { MAX_CSR_BYTES, parseCsr } from './csr';
import { JoinRefusal } from './refusal';

const ECDSA_SHA256 = Buffer.from('300a06082a8648ce3d040302', 'hex');

/** Builds a CSR from parts, signing whatever info it is given. */
function buildCsr(opts: {
  key?: KeyObject;
  spki?: Buffer;
  version?: Buffer;
  subject?: Buffer;
  algorithm?: Buffer;
  attributes?: Buffer;
  hash?: string;
}) {
  const key = opts.key ?? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const spki = opts.spki ?? publicOf(key);
  const info = tlv(
    0x30,
    opts.version ?? Buffer.from('020100', 'hex'),
    opts.subject ?? tlv(0x30),
    spki,
    opts.attributes ?? Buffer.from('a000', 'hex'),
  );
  const sig = sign(opts.hash ?? 'sha256', info, { key, dsaEncoding: 'der' });
  return tlv(0x30, info, opts.algorithm ?? ECDSA_SHA256, tlv(0x03, Buffer.from([0]), sig));
}

function publicOf(privateKey: KeyObject): Buffer {
  return createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
}

function refusal(fn: () => unknown): JoinRefusal {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(JoinRefusal);
    const refusal = error as JoinRefusal;
    expect(refusal.reason).toBe('join:csr');
    expect(refusal.message).toBe('Join refused');
    return refusal;
  }
  throw new Error('expected a refusal');
}

describe('parseCsr', () => {
  it('refuses BER anywhere inside, not only at the outer layer: an indefinite-length SET in the subject', () => {
    // SET (indefinite) { SEQUENCE { OID commonName, UTF8String "x" } } end-of-contents, in a definite SEQUENCE.
    const rdn = Buffer.concat([
      Buffer.from('3180', 'hex'),
      tlv(0x30, tlv(0x06, Buffer.from('550403', 'hex')), tlv(0x0c, Buffer.from('x'))),
      Buffer.from('0000', 'hex'),
    ]);
    const ber = buildCsr({ subject: tlv(0x30, rdn) });
    expect(refusal(() => parseCsr(ber)).detail).toBe('indefinite length');
    // The same subject in DER is accepted, so it is the encoding that is refused.
    const der = tlv(0x30, tlv(0x31, tlv(0x30, tlv(0x06, Buffer.from('550403', 'hex')), tlv(0x0c, Buffer.from('x')))));
    expect(parseCsr(buildCsr({ subject: der })).spkiDer.length).toBe(91);
  });

  it('refuses a constructed string and nesting beyond the depth limit', () => {
    const constructedString = tlv(
      0x30,
      tlv(0x31, tlv(0x30, tlv(0x06, Buffer.from('550403', 'hex')), tlv(0x2c, tlv(0x0c, Buffer.from('x'))))),
    );
    expect(refusal(() => parseCsr(buildCsr({ subject: constructedString }))).detail).toBe('constructed string encoding');
    let deep = tlv(0x30);
    for (let i = 0; i < 20; i++) deep = tlv(0x30, deep);
    expect(refusal(() => parseCsr(buildCsr({ subject: deep }))).detail).toBe('nested too deeply');
  });

  it('parses the agent CSR and hashes its DER', () => {
    const agent = generateNodeKeyAndCsr({ commonName: 'r7-u12' });
    const parsed = parseCsr(agent.csrDer);
    expect(parsed.spkiDer.equals(agent.spkiDer)).toBe(true);
    expect(parsed.csrSha256).toBe(createHash('sha256').update(agent.csrDer).digest('hex'));
    expect(parsed.csrSha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('parses a CSR OpenSSL made, extensions and all', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'csr-'));
    execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', path.join(dir, 'k.pem')]);
    execFileSync('openssl', [
      'req',
      '-new',
      '-key',
      path.join(dir, 'k.pem'),
      '-subj',
      '/CN=x/O=y',
      '-addext',
      'subjectAltName=DNS:a.example',
      '-outform',
      'DER',
      '-out',
      path.join(dir, 'openssl.der'),
    ]);
    const parsed = parseCsr(readFileSync(path.join(dir, 'openssl.der')));
    expect(parsed.spkiDer.length).toBe(91);
  });

  it('refuses keys other than uncompressed P-256', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    expect(refusal(() => parseCsr(buildCsr({ key: p384 }))).detail).toMatch(/P-256/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
    expect(refusal(() => parseCsr(buildCsr({ key: rsa, spki: publicOf(rsa) }))).detail).toMatch(/P-256/);
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const compressed = createPublicKey(key).export({ format: 'jwk' });
    const x = Buffer.from(compressed.x!, 'base64url');
    const y = Buffer.from(compressed.y!, 'base64url');
    const compressedSpki = tlv(
      0x30,
      Buffer.from('301306072a8648ce3d020106082a8648ce3d030107', 'hex'),
      tlv(0x03, Buffer.from([0, 2 + (y[31]! & 1)]), x),
    );
    expect(refusal(() => parseCsr(buildCsr({ key, spki: compressedSpki }))).detail).toMatch(/P-256/);
  });

  it('refuses a point off the curve', () => {
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const spki = Buffer.from(publicOf(key));
    spki[spki.length - 1]! ^= 1;
    expect(refusal(() => parseCsr(buildCsr({ key, spki }))).detail).toMatch(/public key/);
  });

  it('refuses other signature algorithms, versions and a bad signature', () => {
    const sha384 = Buffer.from('300a06082a8648ce3d040303', 'hex');
    expect(refusal(() => parseCsr(buildCsr({ algorithm: sha384, hash: 'sha384' }))).detail).toMatch(/ecdsa-with-SHA256/);
    const withNull = Buffer.from('300c06082a8648ce3d0403020500', 'hex');
    expect(refusal(() => parseCsr(buildCsr({ algorithm: withNull }))).detail).toMatch(/ecdsa-with-SHA256/);
    expect(refusal(() => parseCsr(buildCsr({ version: Buffer.from('020101', 'hex') }))).detail).toMatch(/version/);
    expect(refusal(() => parseCsr(buildCsr({ hash: 'sha384' }))).detail).toMatch(/self-signature/);

    const other = generateNodeKeyAndCsr();
    const forged = createCsr(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, other.spkiDer);
    expect(refusal(() => parseCsr(forged)).detail).toMatch(/self-signature/);
  });

  it('refuses tampering, trailing bytes and malformed DER', () => {
    const { csrDer } = generateNodeKeyAndCsr({ commonName: 'abc' });
    const tampered = Buffer.from(csrDer);
    tampered[csrDer.indexOf(Buffer.from('abc'))] = 0x78;
    expect(refusal(() => parseCsr(tampered)).detail).toMatch(/self-signature/);
    expect(refusal(() => parseCsr(Buffer.concat([csrDer, Buffer.from([0])]))).detail).toMatch(/trailing/);
    expect(refusal(() => parseCsr(csrDer.subarray(0, csrDer.length - 1))).detail).toMatch(/overruns|truncated/);
    // Re-encode the outer length in a non-minimal long form.
    const body = csrDer.subarray(csrDer[1]! & 0x80 ? 2 + (csrDer[1]! & 0x7f) : 2);
    const nonMinimal = Buffer.concat([Buffer.from([0x30, 0x82, body.length >> 8, body.length & 0xff]), body]);
    expect(refusal(() => parseCsr(nonMinimal)).detail).toMatch(/non-minimal/);
    expect(refusal(() => parseCsr(Buffer.from([0x30, 0x80, 0, 0]))).detail).toMatch(/indefinite/);
    expect(refusal(() => parseCsr(buildCsr({ attributes: Buffer.from('3100', 'hex') }))).detail).toMatch(/attributes/);
  });

  it('caps the input size', () => {
    expect(refusal(() => parseCsr(Buffer.alloc(0))).detail).toMatch(/size/);
    expect(refusal(() => parseCsr(Buffer.alloc(MAX_CSR_BYTES + 1, 0x30))).detail).toMatch(/size/);
    expect(refusal(() => parseCsr('MIIB' as unknown as Buffer)).detail).toMatch(/size/);
  });
});
