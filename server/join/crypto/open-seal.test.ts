import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { CompactEncrypt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { sealToken, type EncryptionJwk } from '../../../agent/seal-token';
import { DomainError } from '../../../protocol/errors';
import { JoinRefusal } from './refusal';
import { MAX_SEAL_LENGTH, openSeal } from './open-seal';

const TOKEN = 'bcjt_jt_01k5w7hq3x4m2v8r9t6y5e4d3c.' + 'A'.repeat(43);
const CSR = 'ab'.repeat(32);
let encryptionKey: KeyObject;
let jwk: EncryptionJwk;
let sealed: string;

beforeAll(async () => {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  encryptionKey = pair.privateKey;
  jwk = pair.publicKey.export({ format: 'jwk' }) as EncryptionJwk;
  sealed = await sealToken(TOKEN, jwk, CSR, 1_764_432_000);
});

function refusedBecause(jwe: string, options: { csrSha256?: string; key?: KeyObject } = {}): string {
  try {
    openSeal(jwe, { encryptionKey: options.key ?? encryptionKey, csrSha256: options.csrSha256 ?? CSR });
  } catch (error) {
    expect(error).toBeInstanceOf(JoinRefusal);
    expect((error as JoinRefusal).reason).toBe('join:token');
    expect((error as JoinRefusal).message).toBe('Join refused');
    return (error as JoinRefusal).detail;
  }
  throw new Error('expected a refusal');
}

/** Rewrites the protected header of a sealed token (which also breaks its GCM tag, checked last). */
function withHeader(jwe: string, edit: (header: Record<string, unknown>) => void): string {
  const parts = jwe.split('.');
  const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
  edit(header);
  parts[0] = Buffer.from(JSON.stringify(header)).toString('base64url');
  return parts.join('.');
}

function withPart(jwe: string, index: number, edit: (bytes: Buffer) => void): string {
  const parts = jwe.split('.');
  const bytes = Buffer.from(parts[index]!, 'base64url');
  edit(bytes);
  parts[index] = bytes.toString('base64url');
  return parts.join('.');
}

async function joseSeal(header: Record<string, unknown>, parameters?: { apu?: Uint8Array; apv?: Uint8Array }) {
  const encrypt = new CompactEncrypt(new TextEncoder().encode(TOKEN)).setProtectedHeader({
    alg: 'ECDH-ES+A256KW',
    enc: 'A256GCM',
    typ: 'bcjt+jwe',
    iat: 1_764_432_000,
    csr: CSR,
    ...header,
  } as never);
  if (parameters) encrypt.setKeyManagementParameters(parameters);
  return encrypt.encrypt(jwk as never);
}

describe('openSeal', () => {
  it('opens what the agent sealed with jose', () => {
    expect(openSeal(sealed, { encryptionKey, csrSha256: CSR })).toBe(TOKEN);
    const header = JSON.parse(Buffer.from(sealed.split('.')[0]!, 'base64url').toString());
    expect(header).toMatchObject({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM', typ: 'bcjt+jwe', iat: 1_764_432_000, csr: CSR });
  });

  it('feeds apu and apv into the key derivation', async () => {
    const jwe = await joseSeal({}, { apu: Buffer.from('agent'), apv: Buffer.from('join-service') });
    expect(openSeal(jwe, { encryptionKey, csrSha256: CSR })).toBe(TOKEN);
    expect(refusedBecause(withHeader(jwe, (h) => delete h.apu))).toBe('decryption failed');
  });

  it('accepts only ECDH-ES+A256KW with A256GCM', async () => {
    expect(refusedBecause(await joseSeal({ alg: 'ECDH-ES+A128KW' }))).toMatch(/^alg/);
    expect(refusedBecause(await joseSeal({ alg: 'ECDH-ES' }))).toMatch(/^alg/);
    expect(refusedBecause(await joseSeal({ enc: 'A128GCM' }))).toMatch(/^enc/);
    expect(refusedBecause(await joseSeal({ enc: 'A256CBC-HS512' }))).toMatch(/^enc/);
  });

  it('requires typ, an integer iat and the csr of this request', async () => {
    expect(refusedBecause(withHeader(sealed, (h) => delete h.typ))).toMatch(/^typ/);
    expect(refusedBecause(await joseSeal({ typ: 'JWT' }))).toMatch(/^typ/);
    expect(refusedBecause(withHeader(sealed, (h) => delete h.iat))).toMatch(/^iat/);
    expect(refusedBecause(withHeader(sealed, (h) => (h.iat = 1.5)))).toMatch(/^iat/);
    expect(refusedBecause(withHeader(sealed, (h) => (h.iat = '1764432000')))).toMatch(/^iat/);
    expect(refusedBecause(sealed, { csrSha256: 'cd'.repeat(32) })).toMatch(/^csr/);
    expect(refusedBecause(withHeader(sealed, (h) => (h.csr = CSR.toUpperCase())))).toMatch(/^csr/);
    expect(refusedBecause(withHeader(sealed, (h) => delete h.csr))).toMatch(/^csr/);
  });

  it('refuses zip and crit', () => {
    expect(refusedBecause(withHeader(sealed, (h) => (h.zip = 'DEF')))).toMatch(/^zip/);
    expect(refusedBecause(withHeader(sealed, (h) => (h.crit = ['exp'])))).toMatch(/^crit/);
  });

  it('refuses an epk that is not a point on P-256', () => {
    expect(
      refusedBecause(
        withHeader(sealed, (h) => {
          const epk = h.epk as { y: string };
          const y = Buffer.from(epk.y, 'base64url');
          y[31]! ^= 1;
          epk.y = y.toString('base64url');
        }),
      ),
    ).toBe('epk is not a point on P-256');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ format: 'jwk' });
    expect(refusedBecause(withHeader(sealed, (h) => (h.epk = p384)))).toMatch(/not a P-256/);
    expect(refusedBecause(withHeader(sealed, (h) => (h.epk = { ...p384, crv: 'P-256' })))).toMatch(/32 bytes/);
    const x25519 = generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' });
    expect(refusedBecause(withHeader(sealed, (h) => (h.epk = x25519)))).toMatch(/not a P-256/);
    expect(refusedBecause(withHeader(sealed, (h) => delete h.epk))).toMatch(/epk is missing/);
    const withPrivate = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
    expect(refusedBecause(withHeader(sealed, (h) => (h.epk = withPrivate)))).toMatch(/private/);
  });

  it('refuses tampering and the wrong key', () => {
    const flip = (bytes: Buffer) => (bytes[0]! ^= 1);
    expect(refusedBecause(withPart(sealed, 1, flip))).toBe('decryption failed');
    expect(refusedBecause(withPart(sealed, 2, flip))).toBe('decryption failed');
    expect(refusedBecause(withPart(sealed, 3, flip))).toBe('decryption failed');
    expect(refusedBecause(withPart(sealed, 4, flip))).toBe('decryption failed');
    expect(refusedBecause(withHeader(sealed, (h) => (h.kid = 'x')))).toBe('decryption failed');
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    expect(refusedBecause(sealed, { key: other })).toBe('decryption failed');
  });

  it('refuses malformed compact serializations', () => {
    const parts = sealed.split('.');
    expect(refusedBecause(parts.slice(0, 4).join('.'))).toMatch(/compact/);
    expect(refusedBecause(`${sealed}.`)).toMatch(/compact/);
    expect(refusedBecause(sealed.replace('.', '=.'))).toMatch(/base64url/);
    expect(refusedBecause([parts[0], parts[1], `${parts[2]}+`, parts[3], parts[4]].join('.'))).toMatch(/base64url/);
    expect(refusedBecause([parts[0], parts[1], parts[2]!.slice(0, -2), parts[3], parts[4]].join('.'))).toMatch(/iv|base64url/);
    expect(refusedBecause([parts[0], parts[1], parts[2], '', parts[4]].join('.'))).toMatch(/ciphertext/);
    expect(refusedBecause(`${Buffer.from('[]').toString('base64url')}.a.b.c.d`)).toMatch(/object/);
    expect(refusedBecause(`${Buffer.from('{').toString('base64url')}.a.b.c.d`)).toMatch(/JSON/);
    expect(refusedBecause('x'.repeat(MAX_SEAL_LENGTH + 1))).toMatch(/size/);
    expect(refusedBecause(42 as unknown as string)).toMatch(/size/);
  });

  it('treats a key that cannot open seals as configuration, not a refusal', () => {
    const publicKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    expect(() => openSeal(sealed, { encryptionKey: publicKey, csrSha256: CSR })).toThrow(DomainError);
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    expect(() => openSeal(sealed, { encryptionKey: p384, csrSha256: CSR })).toThrow(/P-256/);
  });
});
