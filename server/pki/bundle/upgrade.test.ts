import { randomBytes, X509Certificate } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../db/client';
import { db, useOwnDatabase } from '../../../test/own-database';
import { createPkiBundle, type PkiBundle } from './bundle';
import { joinCryptoFromBundle } from '../issuance/join-crypto';
import { installPins } from '../pins-summary';
import { isCurrentSeal, openPkiBundle, sealParameters } from './seal';
import { isSelfSigned } from './signing-certificate';
import { loadPki, PKI_BUNDLE_ID } from './store';
import { openssl } from '../../../test/pki/openssl';
import { sealPkiBundleV1, withNodeCaIssuedSigningCertificate } from '../../../test/pki/legacy';
import { upgradeStoredPki } from './upgrade';

// The bundle is a singleton row, so this file works in a database of its own.
const secret = randomBytes(32).toString('base64url');
useOwnDatabase('pki_upgrade');

beforeEach(async () => {
  await db.pkiBundle.deleteMany({});
});

/** Stores `sealed` as the deployment's bundle row, as an older release left it. */
async function store(bundle: PkiBundle, sealed: Buffer) {
  await db.pkiBundle.create({ data: { id: PKI_BUNDLE_ID, trustDomain: bundle.trustDomain, sealed: new Uint8Array(sealed) } });
}
const storedBytes = async () => Buffer.from((await db.pkiBundle.findUniqueOrThrow({ where: { id: PKI_BUNDLE_ID } })).sealed);

/** An install from before: version 1 seal (N=2^15) and a signing certificate the node CA issued. */
function legacyInstall() {
  const bundle = withNodeCaIssuedSigningCertificate(createPkiBundle({ trustDomain: 'compute.example.com' }));
  return { bundle, sealed: sealPkiBundleV1(bundle, secret), pins: installPins(bundle) };
}

const verifiesAsNodeClient = (bundle: PkiBundle) => {
  try {
    openssl(['verify', '-purpose', 'sslclient', '-CAfile', '{ca.pem}', '{leaf.pem}'], {
      'ca.pem': bundle.nodeCa.certificatePem,
      'leaf.pem': bundle.signingKey.certificatePem,
    });
    return true;
  } catch {
    return false;
  }
};

// Every open and seal derives a key with scrypt N=2^17 (128 MiB, about a second on a busy machine).
describe('upgradeStoredPki', { timeout: 120_000 }, () => {
  it('re-seals an old bundle with scrypt N=2^17 and gives its signing key a self-signed certificate, pins unchanged', async () => {
    const old = legacyInstall();
    await store(old.bundle, old.sealed);
    expect(verifiesAsNodeClient(old.bundle)).toBe(true);

    const upgrade = await upgradeStoredPki(db, { secret });
    expect(upgrade).toMatchObject({ resealed: true, rotatedSigningCertificate: true, changedSecret: false });
    const row = await storedBytes();
    expect(row.subarray(0, 6).toString('latin1')).toBe('BCPKI2');
    expect(sealParameters(row)).toEqual({ logN: 17, r: 8, p: 1 });
    expect(isCurrentSeal(row)).toBe(true);

    const loaded = await loadPki(db, secret);
    expect(loaded).toEqual(upgrade.bundle);
    // Same keys and CAs; only the signing certificate changed, and every pin an install embeds is the same.
    expect({ ...loaded, signingKey: undefined }).toEqual({ ...old.bundle, signingKey: undefined });
    expect(loaded.signingKey.privateKeyPem).toBe(old.bundle.signingKey.privateKeyPem);
    expect(installPins(loaded)).toEqual(old.pins);
    expect(joinCryptoFromBundle(loaded).signingKeyPin).toBe(old.pins.joinSigningKeyPin);
    const cert = new X509Certificate(loaded.signingKey.certificatePem);
    expect(isSelfSigned(cert)).toBe(true);
    expect(cert.validTo).toBe(new X509Certificate(old.bundle.signingKey.certificatePem).validTo);
    expect(verifiesAsNodeClient(loaded)).toBe(false);

    // The next start finds nothing to do and writes nothing.
    expect(await upgradeStoredPki(db, { secret })).toMatchObject({ resealed: false, rotatedSigningCertificate: false });
    expect((await storedBytes()).equals(row)).toBe(true);
  });

  it('loses nothing when the start crashes before the new seal is written: the old row still opens, the next start upgrades', async () => {
    const old = legacyInstall();
    await store(old.bundle, old.sealed);
    // The write is the one UPDATE; failing it is what a crash at any point before its commit leaves behind.
    const crashing = new Proxy(db, {
      get: (target, key) =>
        key === 'pkiBundle'
          ? new Proxy(target.pkiBundle, {
              get: (model, k) => (k === 'updateMany' ? async () => Promise.reject(new Error('killed mid-upgrade')) : Reflect.get(model, k)),
            })
          : Reflect.get(target, key),
    }) as Db;
    await expect(upgradeStoredPki(crashing, { secret })).rejects.toThrow('killed mid-upgrade');
    expect((await storedBytes()).equals(old.sealed)).toBe(true);
    expect(openPkiBundle(await storedBytes(), secret)).toEqual(old.bundle);

    expect(await upgradeStoredPki(db, { secret })).toMatchObject({ resealed: true, rotatedSigningCertificate: true });
    expect(installPins(await loadPki(db, secret))).toEqual(old.pins);
  });

  it('lets two starts upgrade at once: one writes, the other reads what it wrote', async () => {
    const old = legacyInstall();
    await store(old.bundle, old.sealed);
    const [a, b] = await Promise.all([upgradeStoredPki(db, { secret }), upgradeStoredPki(db, { secret })]);
    expect([a.resealed, b.resealed].filter(Boolean).length).toBeGreaterThanOrEqual(1);
    const stored = await loadPki(db, secret);
    expect(a.bundle).toEqual(stored);
    expect(b.bundle).toEqual(stored);
    expect(isSelfSigned(new X509Certificate(stored.signingKey.certificatePem))).toBe(true);
  });

  it('moves an install sealed under an old, short secret to a new one given the old one as previousSecret', async () => {
    const oldSecret = 'sixteen-chars-ok';
    const bundle = createPkiBundle({ trustDomain: 'compute.example.com' });
    await store(bundle, sealPkiBundleV1(bundle, oldSecret));
    await expect(upgradeStoredPki(db, { secret })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', field: 'BETTER_COMPUTE_SECRET' });

    const upgrade = await upgradeStoredPki(db, { secret, previousSecret: oldSecret });
    expect(upgrade).toMatchObject({ resealed: true, changedSecret: true, rotatedSigningCertificate: false });
    expect(await loadPki(db, secret)).toEqual(bundle);
    await expect(loadPki(db, oldSecret)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
