import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { activateChallenge } from '../../../../agent/tpm/attestation';
import { TpmError } from '../../../../agent/tpm/client';
import { attestationKeyTemplate } from '../../../../agent/tpm/templates';
import { answerTpmChallenge, prepareTpmJoin } from '../../../../agent/tpm/join-material';
import { createEkRoot, issueEkCertificate, writeEkCertificate } from '../../../../test/tpm-provision';
import { ak, check, newKey, refusal, roundOne, root, rootsDir, tpm, useSwtpm, withEk, withKeys } from '../../../../test/swtpm-attestation';
import { parseCsr } from '../../crypto/csr';
import { loadEkRoots } from './ek-certificate';
import { makeCredential } from './make-credential';
import { tpmName, parseTpmPublic } from './public-area';

// bcd's TPM join against swtpm, verified by the server (tpm-tampered.test.ts: the attestations it refuses).
useSwtpm();

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
