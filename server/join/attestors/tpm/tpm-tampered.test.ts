import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { certifyNodeKey } from '../../../../agent/tpm/attestation';
import { OBJECT } from '../../../../protocol/tpm/constants';
import { attestationKeyTemplate } from '../../../../agent/tpm/templates';
import {
  ak,
  check,
  eccTemplate,
  newKey,
  refusal,
  roundOne,
  tpm,
  TPM_MADE,
  useSwtpm,
  withEk,
  withKeys,
} from '../../../../test/swtpm-attestation';
import { parseTpmPublic } from './public-area';

// Attestations made in swtpm and then changed, or made with keys of the wrong kind: the server refuses each
// with its reason (tpm-round-trip.test.ts: the ones it verifies).
useSwtpm();

describe('tampered TPM attestations are refused with their reason', () => {
  it('a Certify signed by another AK: tpm:attest-signature', async () => {
    const otherAk = await newKey(attestationKeyTemplate());
    const { body, csr } = await roundOne({ signer: otherAk });
    expect(refusal(check(body, csr))).toBe('verified');
    expect(refusal(check({ ...body, akPublic: ak.publicArea.toString('base64') }, csr))).toBe('tpm:attest-signature');
  });

  it('a restricted node key: tpm:node-key-restricted', async () => {
    const restricted = await newKey(attestationKeyTemplate());
    const ek = await withEk('ecc', async (loaded) => loaded);
    const body = await withKeys([ak, restricted], ([akHandle, keyHandle]) =>
      certifyNodeKey(tpm, {
        ek,
        akHandle,
        akPublic: ak.publicArea,
        nodeKeyHandle: keyHandle,
        nodeKeyPublic: restricted.publicArea,
        csrDer: Buffer.from('csr'),
      }),
    );
    const { spkiOf } = await import('./public-area');
    const csr = {
      csrSha256: createHash('sha256').update('csr').digest('hex'),
      spkiDer: spkiOf(parseTpmPublic(restricted.publicArea, 'key')),
    };
    expect(refusal(check(body, csr))).toBe('tpm:node-key-restricted');
  });

  it('a node key that cannot sign, or may leave its TPM: tpm:node-key-sign, tpm:node-key-fixed-tpm', async () => {
    const { spkiOf } = await import('./public-area');
    const ek = await withEk('ecc', async (loaded) => loaded);
    for (const [template, reason] of [
      [eccTemplate(TPM_MADE | OBJECT.decrypt, false), 'tpm:node-key-sign'],
      [eccTemplate(OBJECT.sensitiveDataOrigin | OBJECT.userWithAuth | OBJECT.sign), 'tpm:node-key-fixed-tpm'],
    ] as const) {
      const key = await newKey(template);
      const body = await withKeys([ak, key], ([akHandle, keyHandle]) =>
        certifyNodeKey(tpm, {
          ek,
          akHandle,
          akPublic: ak.publicArea,
          nodeKeyHandle: keyHandle,
          nodeKeyPublic: key.publicArea,
          csrDer: Buffer.from('csr'),
        }),
      );
      const csr = { csrSha256: createHash('sha256').update('csr').digest('hex'), spkiDer: spkiOf(parseTpmPublic(key.publicArea, 'key')) };
      expect(refusal(check(body, csr))).toBe(reason);
    }
  });

  it('an EK that is not a restricted decryption key: tpm:ek-attributes', async () => {
    const { body, csr } = await roundOne();
    const ekPublic = Buffer.from(body.ekPublic, 'base64');
    const signing = Buffer.from(ekPublic);
    signing.writeUInt32BE(ekPublic.readUInt32BE(4) | OBJECT.sign, 4);
    const unrestricted = Buffer.from(ekPublic);
    unrestricted.writeUInt32BE(ekPublic.readUInt32BE(4) & ~OBJECT.restricted, 4);
    expect(refusal(check({ ...body, ekPublic: signing.toString('base64') }, csr))).toBe('tpm:ek-attributes');
    expect(refusal(check({ ...body, ekPublic: unrestricted.toString('base64') }, csr))).toBe('tpm:ek-attributes');
  });

  it('an AK that can decrypt: tpm:ak-decrypt', async () => {
    const decryptingAk = await newKey(eccTemplate(TPM_MADE | OBJECT.sign | OBJECT.decrypt, false));
    const { body, csr } = await roundOne({ signer: decryptingAk, schemeless: true });
    expect(refusal(check(body, csr))).toBe('tpm:ak-decrypt');
  });

  it('an AK that is not restricted: tpm:ak-restricted', async () => {
    const unrestricted = await newKey(eccTemplate(TPM_MADE | OBJECT.sign));
    const { body, csr } = await roundOne({ signer: unrestricted });
    expect(refusal(check(body, csr))).toBe('tpm:ak-restricted');
  });

  it('an AK that may leave its TPM: tpm:ak-fixed-tpm', async () => {
    const duplicable = await newKey(eccTemplate(OBJECT.sensitiveDataOrigin | OBJECT.userWithAuth | OBJECT.sign | OBJECT.restricted));
    const { body, csr } = await roundOne({ signer: duplicable });
    expect(refusal(check(body, csr))).toBe('tpm:ak-fixed-tpm');
  });

  it('qualifying data that is not sha256(csr): tpm:attest-qualifying-data', async () => {
    const { body, csr } = await roundOne({ certifyOver: Buffer.from('another CSR') });
    expect(refusal(check(body, csr))).toBe('tpm:attest-qualifying-data');
  });

  it('a Certify of another key than the node key: tpm:attest-name', async () => {
    const otherKey = await newKey(eccTemplate(TPM_MADE | OBJECT.sign));
    const { body: other } = await roundOne({ certified: otherKey });
    const { body, csr } = await roundOne();
    // The other key's attestation by the same AK, over this CSR's hash, presented for this node key.
    const overThisCsr = await withKeys([ak, otherKey], async ([akHandle, keyHandle]) => {
      const { attest, signature } = await tpm.certify(keyHandle, akHandle, Buffer.from(csr.csrSha256, 'hex'));
      return { ...body, certifyInfo: attest.toString('base64'), certifySignature: signature.toString('base64') };
    });
    expect(refusal(check(other, csr))).toBe('tpm:node-key-csr');
    expect(refusal(check(overThisCsr, csr))).toBe('tpm:attest-name');
  });

  it('a node key that is not the CSR key: tpm:node-key-csr', async () => {
    const { body } = await roundOne();
    const { csr: otherCsr } = await roundOne({ certified: await newKey(eccTemplate(TPM_MADE | OBJECT.sign)) });
    expect(refusal(check(body, otherCsr))).toBe('tpm:node-key-csr');
  });

  it('an attestation whose magic or type was changed: tpm:attest-magic, tpm:attest-type', async () => {
    const { body, csr } = await roundOne();
    const info = Buffer.from(body.certifyInfo, 'base64');
    const badMagic = Buffer.from(info);
    badMagic[0]! ^= 0x01;
    const badType = Buffer.from(info);
    badType[5] = 0x18; // TPM_ST_ATTEST_QUOTE
    expect(refusal(check({ ...body, certifyInfo: badMagic.toString('base64') }, csr))).toBe('tpm:attest-magic');
    expect(refusal(check({ ...body, certifyInfo: badType.toString('base64') }, csr))).toBe('tpm:attest-type');
    // A bit flipped in the certified content keeps the structure and breaks the AK's signature.
    const flipped = Buffer.from(info);
    flipped[flipped.length - 1]! ^= 0x01;
    expect(refusal(check({ ...body, certifyInfo: flipped.toString('base64') }, csr))).toBe('tpm:attest-signature');
  });
});
