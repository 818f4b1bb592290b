import { createHash, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { activateChallenge, certifyNodeKey } from '../../../../agent/tpm/attestation';
import { TpmError } from '../../../../agent/tpm/client';
import { attestationKeyTemplate } from '../../../../agent/tpm/templates';
import { answerTpmChallenge, prepareTpmJoin } from '../../../../agent/tpm/join-material';
import { OBJECT } from '../../../../protocol/tpm/constants';
import { createEkRoot, issueEkCertificate, writeEkCertificate } from '../../../../test/tpm-provision';
import {
  ak,
  eccTemplate,
  newKey,
  roundOne,
  root,
  rootsDir,
  tpm,
  TPM_MADE,
  useSwtpm,
  withEk,
  withKeys,
} from '../../../../test/swtpm-attestation';
import { parseCsr } from '../../crypto/csr';
import { loadEkRoots } from './ek-certificate';
import { makeCredential } from './make-credential';
import { tpmName, parseTpmPublic } from './public-area';
import { verifyTpmAttestation, type TpmVerdict } from './verify';
import { parseTpmAttestation } from './wire';

// bcd's TPM join against swtpm, verified by the server, and the attestations it refuses once changed or made with
// keys of the wrong kind.
useSwtpm();

/** The server's verdict on an attestation `body` for `csr`, with `ekRoots` as the configured vendor roots. */
const check = (body: unknown, csr: { csrSha256: string; spkiDer: Buffer }, ekRoots: X509Certificate[] = []): TpmVerdict =>
  verifyTpmAttestation(parseTpmAttestation({ siteId: 'site_roundtrip', ...(body as object) }), {
    csrSha256: csr.csrSha256,
    csrSpki: csr.spkiDer,
    ekRoots,
    now: new Date(),
  });

const refusal = (verdict: TpmVerdict) => (verdict.ok ? 'verified' : verdict.reason);

describe('a TPM join round trip against swtpm', () => {
  for (const kind of ['ecc', 'rsa'] as const) {
    it(`bcd's Certify verifies on the server and its ${kind.toUpperCase()} EK activates the server's credential`, async () => {
      const { body, csr } = await roundOne({ kind });
      const verdict = check(body, csr);
      if (!verdict.ok) throw new Error(`refused: ${verdict.reason} (${verdict.detail})`);
      const { facts } = verdict;

      // The Name the server computed is the TPM's own for the AK, and the statement carries its digest.
      const loadedName = await withKeys([ak], async ([handle]) => (await tpm.readPublic(handle)).name);
      expect(facts.akName.equals(loadedName)).toBe(true);
      expect(facts.akStatement).toBe(`urn:bc:tpm-ak:sha256:${loadedName.subarray(2).toString('hex')}`);
      expect(facts.nodeKeySpki.equals(csr.spkiDer)).toBe(true);
      expect(facts.ekCertificate).toBeNull();
      expect(facts.ekHash).toMatch(/^[0-9a-f]{64}$/);
      expect(facts.ek.type).toBe(kind);

      const secret = Buffer.from('a fresh 32-byte activation nonce');
      const challenge = makeCredential(facts.ek, facts.akName, secret);
      const activated = await withEk(kind, (ek) =>
        withKeys([ak], ([akHandle]) => activateChallenge(tpm, { akHandle, ekHandle: ek.handle, ...challenge })),
      );
      expect(activated.equals(secret)).toBe(true);
    });
  }

  it("bcd's round one and round two (prepareTpmJoin, answerTpmChallenge) agree with the server, and the AK is kept", async () => {
    const first = await prepareTpmJoin(tpm, { ekKind: 'auto' });
    const csr = parseCsr(first.csr.csrDer);
    const verdict = check(first.attestation, csr);
    if (!verdict.ok) throw new Error(`refused: ${verdict.reason} (${verdict.detail})`);
    const challenge = makeCredential(verdict.facts.ek, verdict.facts.akName, Buffer.alloc(32, 9));
    expect((await answerTpmChallenge(tpm, { ak: first.ak, ekKind: first.ekKind, ...challenge })).equals(Buffer.alloc(32, 9))).toBe(true);

    // A renewal's key attestation: a new node key certified by the same AK, so the statement is unchanged.
    const next = await prepareTpmJoin(tpm, { ekKind: first.ekKind, ak: first.ak });
    const renewed = check(next.attestation, parseCsr(next.csr.csrDer));
    if (!renewed.ok) throw new Error(renewed.reason);
    expect(renewed.facts.akStatement).toBe(verdict.facts.akStatement);
    expect(renewed.facts.nodeKeySpki.equals(verdict.facts.nodeKeySpki)).toBe(false);
  });

  it('a challenge made for another AK does not activate (the TPM refuses the integrity check)', async () => {
    const { body, csr } = await roundOne();
    const verdict = check(body, csr);
    if (!verdict.ok) throw new Error(verdict.reason);
    const otherAk = await newKey(attestationKeyTemplate());
    const challenge = makeCredential(verdict.facts.ek, tpmName(parseTpmPublic(otherAk.publicArea, 'other AK')), Buffer.alloc(32, 7));
    const attempt = withEk('ecc', (ek) =>
      withKeys([ak], ([akHandle]) => activateChallenge(tpm, { akHandle, ekHandle: ek.handle, ...challenge })),
    );
    await expect(attempt).rejects.toBeInstanceOf(TpmError);
  });

  it('an EK certificate in the NV index is read by bcd and chains to the configured vendor root', async () => {
    const ekSpki = await withEk('ecc', async (ek) => parseTpmPublic(ek.publicArea, 'EK'));
    const { spkiOf } = await import('./public-area');
    await writeEkCertificate(tpm, 'ecc', await issueEkCertificate(root, spkiOf(ekSpki), 'ecc'));

    const { body, csr } = await roundOne({ kind: 'ecc' });
    expect(body.ekCertificate).toBeDefined();
    const vendorRoots = loadEkRoots(rootsDir);
    const chained = check(body, csr, vendorRoots);
    if (!chained.ok) throw new Error(chained.reason);
    expect(chained.facts.ekCertificate).toMatchObject({ chainsToRoot: true, issuer: expect.stringContaining('Test TPM Vendor Root') });

    // Another vendor's root: still a valid activation (enrollment), but not a chained one, and the issuer shows.
    const otherRoot = await createEkRoot('CN=Another Vendor');
    const unchained = check(body, csr, [new X509Certificate(otherRoot.pem)]);
    if (!unchained.ok) throw new Error(unchained.reason);
    expect(unchained.facts.ekCertificate).toMatchObject({ chainsToRoot: false, issuer: expect.stringContaining('Test TPM Vendor Root') });

    // The certificate of this EK sent beside another EK's public area certifies another key.
    const rsaEk = await withEk('rsa', async (ek) => ek.publicArea.toString('base64'));
    expect(refusal(check({ ...body, ekPublic: rsaEk }, csr, vendorRoots))).toBe('tpm:ek-certificate-key');
  });
});

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
