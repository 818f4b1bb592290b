import { describe, expect, it } from 'vitest';
import { attestationKeyTemplate, ekTemplate } from '../../../../agent/tpm/templates';
import { parseTpmAttest } from './attest';
import { kdfa } from './kdf';
import { parseTpmPublic, tpmName } from './public-area';
import { TpmCheckFailure } from './reasons';
import { parseTpmAttestation } from './wire';

const reasonOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof TpmCheckFailure) return error.reason;
    throw error;
  }
  return 'parsed';
};

describe('TPM structures on the server', () => {
  it('parses the default EK templates and an AK template field by field', () => {
    const rsa = parseTpmPublic(ekTemplate('rsa'), 'EK');
    expect(rsa).toMatchObject({
      type: 'rsa',
      nameAlg: 0x000b,
      attributes: 0x000300b2,
      symmetric: { algorithm: 0x0006, keyBits: 128, mode: 0x0043 },
    });
    expect(rsa.rsa).toMatchObject({ keyBits: 2048, exponent: 0 });
    const ecc = parseTpmPublic(ekTemplate('ecc'), 'EK');
    expect(ecc.ecc).toMatchObject({ curve: 0x0003, kdf: 0x0010 });
    const ak = parseTpmPublic(attestationKeyTemplate(), 'AK');
    expect(ak).toMatchObject({ type: 'ecc', attributes: 0x00050072, symmetric: null, scheme: { algorithm: 0x0018, hashAlg: 0x000b } });
    expect(tpmName(ak).subarray(0, 2).toString('hex')).toBe('000b');
    expect(tpmName(ak)).toHaveLength(34);
  });

  it('refuses a public area with a byte too many or too few, and a keyed-hash object', () => {
    const template = attestationKeyTemplate();
    expect(reasonOf(() => parseTpmPublic(Buffer.concat([template, Buffer.of(0)]), 'AK'))).toBe('tpm:attestation');
    expect(reasonOf(() => parseTpmPublic(template.subarray(0, template.length - 1), 'AK'))).toBe('tpm:attestation');
    const keyedHash = Buffer.from(template);
    keyedHash.writeUInt16BE(0x0008, 0);
    expect(reasonOf(() => parseTpmPublic(keyedHash, 'AK'))).toBe('tpm:attestation');
  });

  it('refuses a SHA-1 Name, which a second preimage would let another key share', () => {
    const sha1 = Buffer.from(attestationKeyTemplate());
    sha1.writeUInt16BE(0x0004, 2);
    expect(reasonOf(() => tpmName(parseTpmPublic(sha1, 'AK')))).toBe('tpm:attestation');
  });

  it('refuses a truncated attestation as malformed', () => {
    expect(reasonOf(() => parseTpmAttest(Buffer.from('ff54434780170000', 'hex')))).toBe('tpm:attestation');
  });

  it('KDFa truncates to the bits asked for and depends on every input', () => {
    const key = Buffer.alloc(32, 1);
    const base = kdfa('sha256', key, 'STORAGE', Buffer.from('name'), Buffer.alloc(0), 128);
    expect(base).toHaveLength(16);
    expect(kdfa('sha256', key, 'STORAGE', Buffer.from('name'), Buffer.alloc(0), 512)).toHaveLength(64);
    // The bit count is hashed in, so a longer key is not an extension of a shorter one.
    expect(kdfa('sha256', key, 'STORAGE', Buffer.from('name'), Buffer.alloc(0), 256).subarray(0, 16).equals(base)).toBe(false);
    expect(kdfa('sha256', key, 'INTEGRITY', Buffer.from('name'), Buffer.alloc(0), 128).equals(base)).toBe(false);
  });
});

describe('the tpm attestation wire', () => {
  const valid = {
    ekPublic: 'AAE=',
    akPublic: 'AAE=',
    nodeKeyPublic: 'AAE=',
    certifyInfo: 'AAE=',
    certifySignature: 'AAE=',
    siteId: 'site_1',
  };

  it('takes the round-one fields and ignores unknown ones', () => {
    const parsed = parseTpmAttestation({ ...valid, futureField: 1 });
    expect(parsed.ekPublic.equals(Buffer.of(0, 1))).toBe(true);
    expect('futureField' in parsed).toBe(false);
  });

  it('refuses missing fields, non-canonical or url-safe base64 and oversized values', () => {
    const { akPublic: _, ...noAk } = valid;
    expect(reasonOf(() => parseTpmAttestation(noAk))).toBe('tpm:attestation');
    expect(reasonOf(() => parseTpmAttestation({ ...valid, akPublic: 'AAF=' }))).toBe('tpm:attestation');
    expect(reasonOf(() => parseTpmAttestation({ ...valid, akPublic: 'AA-_' }))).toBe('tpm:attestation');
    expect(reasonOf(() => parseTpmAttestation({ ...valid, ekCertificate: 'A'.repeat(8000) }))).toBe('tpm:attestation');
    expect(reasonOf(() => parseTpmAttestation({ ...valid, activation: { challengeId: 'nope', secret: 'AAE=' } }))).toBe('tpm:attestation');
    expect(reasonOf(() => parseTpmAttestation(null))).toBe('tpm:attestation');
    // A tokenless join names its site; a pool is optional but must be a pool id.
    const { siteId: __, ...noSite } = valid;
    expect(reasonOf(() => parseTpmAttestation(noSite))).toBe('tpm:attestation');
    expect(reasonOf(() => parseTpmAttestation({ ...valid, poolId: 'site_2' }))).toBe('tpm:attestation');
    expect(parseTpmAttestation({ ...valid, poolId: 'pool_2' }).poolId).toBe('pool_2');
  });
});
