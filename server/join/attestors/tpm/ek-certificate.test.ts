import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEkIntermediate, createEkRoot, issueEkCertificate, type EkIssuer } from '../../../../test/tpm-provision';
import { checkEkCertificate, loadEkRoots } from './ek-certificate';
import { TpmCheckFailure } from './reasons';

// A software key stands in for the EK: the chain rules do not depend on where the key lives.
const ek = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
const ekSpki = ek.export({ type: 'spki', format: 'der' });
const now = new Date();
let root: EkIssuer;
let intermediate: EkIssuer;
let dir: string;

beforeAll(async () => {
  root = await createEkRoot();
  intermediate = await createEkIntermediate(root);
  dir = mkdtempSync(join(tmpdir(), 'bc-ek-roots-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const der = (issuer: EkIssuer) => Buffer.from(issuer.cert.rawData);
const roots = () => [new X509Certificate(root.pem)];

describe('EK certificate chaining', () => {
  it('chains through a given intermediate to a configured root, and not without it', async () => {
    const leaf = await issueEkCertificate(intermediate, ekSpki, 'ecc');
    expect(checkEkCertificate(leaf, [der(intermediate)], roots(), ek, now)).toMatchObject({
      chainsToRoot: true,
      issuer: 'CN=Test TPM Vendor Intermediate',
    });
    expect(checkEkCertificate(leaf, [], roots(), ek, now)).toMatchObject({
      chainsToRoot: false,
      chainProblem: expect.stringContaining('no configured root'),
    });
  });

  it('reports an expired EK certificate or no roots at all as not chaining (enrollment, not refusal)', async () => {
    const expired = await issueEkCertificate(root, ekSpki, 'ecc', {
      notBefore: new Date(Date.now() - 2 * 86_400_000),
      notAfter: new Date(Date.now() - 86_400_000),
    });
    expect(checkEkCertificate(expired, [], roots(), ek, now)).toMatchObject({
      chainsToRoot: false,
      chainProblem: expect.stringContaining('validity'),
    });
    const fresh = await issueEkCertificate(root, ekSpki, 'ecc');
    expect(checkEkCertificate(fresh, [], [], ek, now)).toMatchObject({ chainsToRoot: false, chainProblem: 'no EK roots are configured' });
    expect(checkEkCertificate(fresh, [], roots(), ek, now)).toMatchObject({ chainsToRoot: true });
  });

  it('refuses a certificate for another key and bytes that are not a certificate', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const leaf = await issueEkCertificate(root, ekSpki, 'ecc');
    const reason = (run: () => unknown) => {
      try {
        run();
        return 'accepted';
      } catch (error) {
        return error instanceof TpmCheckFailure ? error.reason : String(error);
      }
    };
    expect(reason(() => checkEkCertificate(leaf, [], roots(), other, now))).toBe('tpm:ek-certificate-key');
    expect(reason(() => checkEkCertificate(Buffer.from('not DER'), [], roots(), ek, now))).toBe('tpm:ek-certificate');
  });

  it('loads every PEM of the roots directory and names a file that holds none', () => {
    writeFileSync(join(dir, 'vendors.pem'), root.pem + intermediate.pem);
    writeFileSync(join(dir, 'README'), 'ignored: not a certificate file name');
    const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
    expect(loadEkRoots(dir).map((cert) => cert.fingerprint256)).toEqual([fingerprint(root.pem), fingerprint(intermediate.pem)]);
    writeFileSync(join(dir, 'broken.crt'), 'no certificate here');
    expect(() => loadEkRoots(dir)).toThrow(`EK roots: ${join(dir, 'broken.crt')} holds no PEM certificate`);
  });
});
