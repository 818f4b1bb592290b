import { createPublicKey } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signedBy, trustBody, trustGeneration, type TrustGeneration } from '../../test/trust-fixture';
import { TRUST_FILE, TrustStore, readTrustFile } from './store';
import { learnFromWellKnown } from './well-known';

const NODE = 'node_rot1';
const old: TrustGeneration = trustGeneration();
const next: TrustGeneration = trustGeneration();
const stranger: TrustGeneration = trustGeneration();
const install = { servingCaPin: old.servingCaPin, joinSigningKeyPin: old.signingPin, joinEncryptionKeyPin: old.encryptionPin };

let dir: string;
let lines: string[];
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'trust-store-'));
  lines = [];
});
afterEach(() => rm(dir, { recursive: true, force: true }));

async function openStore(options: Partial<Parameters<typeof TrustStore.open>[0]> = {}) {
  const store = await TrustStore.open({ dir, install, log: (line) => lines.push(line), ...options });
  store.learnSigningKey(createPublicKey(old.signingKey));
  return store;
}

describe('TrustStore', () => {
  it('starts from the install pins at version 0 when no trust.json is held', async () => {
    const store = await openStore();
    expect(store.version).toBe(0);
    expect(store.servingCaPins()).toEqual([old.servingCaPin]);
    expect([...store.signingKeys().keys()]).toEqual([old.signingPin]);
    // A key whose pin is not trusted is not learned.
    expect(store.learnSigningKey(createPublicKey(next.signingKey))).toBe(false);
  });

  it('applies a set signed by a trusted key for this node at a higher version, stores it 0600 and loads it again', async () => {
    const store = await openStore();
    const applied = await store.acceptEvent(signedBy(trustBody(NODE, 3, [next, old]), [old]), NODE);
    expect(applied).toBe(true);
    expect(store.version).toBe(3);
    expect(store.servingCaPins()).toEqual([next.servingCaPin, old.servingCaPin]);
    expect(store.sealingJwk()).toEqual(next.encryptionJwk);
    expect(store.learnSigningKey(createPublicKey(next.signingKey))).toBe(true);
    const file = path.join(dir, TRUST_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const record = JSON.parse(await readFile(file, 'utf8'));
    expect(record).toMatchObject({
      format: 1,
      version: 3,
      servingCaPins: [next.servingCaPin, old.servingCaPin],
      joinSigningKeyPins: [next.signingPin, old.signingPin],
      joinEncryptionKeyPins: [next.encryptionPin, old.encryptionPin],
      joinEncryptionJwks: [next.encryptionJwk, old.encryptionJwk],
      commandTrustBundle: [...next.bundle.commandTrustBundle, ...old.bundle.commandTrustBundle],
      installPins: install,
    });
    // No temporary file is left beside it.
    expect(await readdir(dir)).toEqual([TRUST_FILE]);
    const again = await TrustStore.open({ dir, install, log: () => {} });
    expect(again.version).toBe(3);
    expect(again.servingCaPins()).toEqual([next.servingCaPin, old.servingCaPin]);
    expect(lines).toEqual([`agent: trust set version 3 from trust event applied and stored in ${TRUST_FILE}`]);
  });

  it('then accepts an envelope signed only by the new key, which it refused before', async () => {
    const store = await openStore();
    const onlyNew = signedBy(trustBody(NODE, 5, [next]), [next]);
    expect(await store.acceptEvent(onlyNew, NODE)).toBe(false);
    expect(lines.at(-1)).toBe('agent: ignored a trust set from trust event: the envelope is not signed by a trusted join signing key');
    expect(await store.acceptEvent(signedBy(trustBody(NODE, 4, [next, old]), [old]), NODE)).toBe(true);
    // The key for the new pin comes from the well-known document (join.next), accepted now that its pin is trusted.
    expect(
      learnFromWellKnown(store, {
        join: { signingCertificate: old.signingCertificate, next: { signingCertificate: next.signingCertificate } },
      }),
    ).toBe(2);
    expect(await store.acceptEvent(onlyNew, NODE)).toBe(true);
    expect(store.version).toBe(5);
    expect(store.servingCaPins()).toEqual([next.servingCaPin]);
    // The old key was dropped from the set: an envelope signed only by it is now refused.
    expect(await store.acceptEvent(signedBy(trustBody(NODE, 6, [old]), [old]), NODE)).toBe(false);
  });

  it('accepts an envelope whose sig is an unknown key when one of its sigs is a trusted pin', async () => {
    const store = await openStore();
    expect(await store.acceptEvent(signedBy(trustBody(NODE, 2, [next, old]), [next, old]), NODE)).toBe(true);
    // A sigs entry that names a trusted pin but was made by another key does not verify.
    const forged = signedBy(trustBody(NODE, 9, [stranger]), [stranger, stranger]);
    forged.sigs![1] = { pin: old.signingPin, sig: forged.sigs![1]!.sig };
    expect(await store.acceptEvent(forged, NODE)).toBe(false);
  });

  it.each([
    [
      'an untrusted signer',
      () => signedBy(trustBody(NODE, 9, [stranger]), [stranger]),
      'the envelope is not signed by a trusted join signing key',
    ],
    ['another node', () => signedBy(trustBody('node_other', 9, [stranger]), [old]), 'it is for another node than node_rot1'],
    ['an equal version', () => signedBy(trustBody(NODE, 2, [stranger]), [old]), 'version 2 is not newer than the held version 2'],
    ['a lower version', () => signedBy(trustBody(NODE, 1, [stranger]), [old]), 'version 1 is not newer than the held version 2'],
    [
      'a malformed set',
      () => signedBy({ ...trustBody(NODE, 9, [stranger]), servingCaPins: 'sha256/x' }, [old]),
      'malformed: servingCaPins is not a list of pins',
    ],
    ['a body that is no trust set', () => signedBy({ status: 'welcome', nodeId: NODE }, [old]), 'the body is not a trust set'],
    ['a malformed envelope', () => ({ body: 42 }), 'the envelope is malformed'],
  ])('ignores and logs %s, keeping the held set', async (_name, envelope, why) => {
    const store = await openStore();
    expect(await store.acceptEvent(signedBy(trustBody(NODE, 2, [old]), [old]), NODE)).toBe(true);
    const before = await readFile(path.join(dir, TRUST_FILE), 'utf8');
    expect(await store.acceptEvent(envelope(), NODE)).toBe(false);
    expect(lines.at(-1)).toBe(`agent: ignored a trust set from trust event: ${why}`);
    expect(store.version).toBe(2);
    expect(store.servingCaPins()).toEqual([old.servingCaPin]);
    expect(await readFile(path.join(dir, TRUST_FILE), 'utf8')).toBe(before);
    // One line, and never the envelope.
    expect(lines.at(-1)).not.toContain('"body"');
  });

  it('a crash between writing and renaming leaves the old file, and the set is not applied', async () => {
    const store = await openStore();
    await store.acceptEvent(signedBy(trustBody(NODE, 2, [old]), [old]), NODE);
    const before = await readFile(path.join(dir, TRUST_FILE), 'utf8');
    const crashing = await openStore({ hooks: { beforeRename: () => Promise.reject(new Error('power lost')) } });
    expect(crashing.version).toBe(2);
    expect(await crashing.acceptEvent(signedBy(trustBody(NODE, 3, [next, old]), [old]), NODE)).toBe(false);
    expect(crashing.version).toBe(2);
    expect(await readFile(path.join(dir, TRUST_FILE), 'utf8')).toBe(before);
    expect(await readdir(dir)).toEqual([TRUST_FILE]);
    expect((await readTrustFile(dir))?.set.version).toBe(2);
  });

  it("a join or renewal answer's trust (pins only) keeps the held JWKs and takes the answer's bundle", async () => {
    const store = await openStore({ joinEncryptionJwk: old.encryptionJwk });
    const { status: _s, nodeId: _n, joinEncryptionJwks: _j, commandTrustBundle: _c, ...pins } = trustBody(NODE, 4, [next, old]);
    expect(await store.acceptAnswerTrust(pins, { commandTrustBundle: next.bundle.commandTrustBundle }, 'renewal answer')).toBe(true);
    expect(store.set.joinEncryptionJwks).toEqual([old.encryptionJwk]);
    expect(store.set.commandTrustBundle).toEqual(next.bundle.commandTrustBundle);
    // Until the new key's JWK is known, seals still go to the old one, which stays trusted.
    expect(store.sealingJwk()).toEqual(old.encryptionJwk);
    learnFromWellKnown(store, { join: { encryptionJwk: next.encryptionJwk, next: { encryptionJwk: stranger.encryptionJwk } } });
    expect(store.sealingJwk()).toEqual(next.encryptionJwk);
    expect(store.set.joinEncryptionJwks).not.toContainEqual(stranger.encryptionJwk);
    const before = lines.length;
    expect(await store.acceptAnswerTrust({ ...pins, version: 4 }, {}, 'renewal answer')).toBe(false);
    expect(lines.length).toBe(before);
  });

  it('sets aside a trust.json that is unreadable or grew from other install pins, with one line', async () => {
    await writeFile(path.join(dir, TRUST_FILE), '{"version":', { mode: 0o600 });
    const broken = await openStore();
    expect(broken.version).toBe(0);
    expect(lines.at(-1)).toMatch(/ignoring .*trust\.json \(trust\.json is not JSON\); trusting the install's pins/);
    await broken.acceptEvent(signedBy(trustBody(NODE, 2, [old]), [old]), NODE);
    const reinstalled = await TrustStore.open({
      dir,
      install: { ...install, servingCaPin: next.servingCaPin },
      log: (line) => lines.push(line),
    });
    expect(reinstalled.version).toBe(0);
    expect(reinstalled.servingCaPins()).toEqual([next.servingCaPin]);
    expect(lines.at(-1)).toMatch(/grew from other install pins/);
  });
});
