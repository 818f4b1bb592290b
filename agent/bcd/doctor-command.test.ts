import * as x509 from '../../test/pki/x509';
import { webcrypto } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeIdentity } from '../identity-store';
import { checkIdentity, runDoctor } from './doctor-command';
import { formatConfigToml } from './config-toml';
import { bcdPaths } from './paths';
import { signedBy, trustBody, trustGeneration } from '../../test/trust-fixture';
import { TrustStore } from '../trust/store';
import { createPublicKey } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

async function keyPem(key: CryptoKey) {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END PRIVATE KEY-----\n`;
}

/** A data directory holding an identity whose leaf is valid from `notBefore` to `notAfter`. */
async function identityDir(notBefore: Date, notAfter: Date, options: { otherKey?: boolean } = {}) {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    { name: 'CN=node', keys, notBefore, notAfter, signingAlgorithm: ALG, serialNumber: '01' },
    webcrypto as unknown as Crypto,
  );
  const stored = options.otherKey
    ? ((await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair).privateKey
    : keys.privateKey;
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'doctor-')), 'bcd');
  await writeIdentity(dir, {
    privateKeyPem: await keyPem(stored),
    certificateChain: [Buffer.from(cert.rawData).toString('base64')],
    nodeId: 'node_1',
    siteId: 'site_1',
    trustDomain: 'example.com',
    role: 'node',
  });
  return dir;
}

const day = 86_400_000;

describe('bcd doctor: identity', () => {
  it('passes a current identity and names the node', async () => {
    const dir = await identityDir(new Date(Date.now() - day), new Date(Date.now() + day));
    expect(await checkIdentity(dir)).toMatch(/^node node_1, site site_1, role node, certificate valid until /);
  });

  it('fails an expired certificate with the way back the spec gives', async () => {
    const dir = await identityDir(new Date(Date.now() - 3 * day), new Date(Date.now() - day));
    await expect(checkIdentity(dir)).rejects.toThrow(
      /the certificate expired at .*; join again as root: bcd join --reset --yes, then bcd join/,
    );
  });

  it('fails a node.key that is not the certified key, and a machine that never joined', async () => {
    await expect(
      checkIdentity(await identityDir(new Date(Date.now() - day), new Date(Date.now() + day), { otherKey: true })),
    ).rejects.toThrow(/not the key the certificate certifies/);
    await expect(checkIdentity(mkdtempSync(path.join(tmpdir(), 'doctor-empty-')))).rejects.toThrow(/^not joined/);
  });
});

describe('bcd doctor: trust', () => {
  it('prints the trust version held and its pins, from trust.json beside the identity', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'doctor-trust-'));
    const env = { ...process.env, BCD_ROOT: root };
    const paths = bcdPaths(env);
    const [old, next] = [trustGeneration(), trustGeneration()];
    const config = {
      gatewayUrl: 'https://127.0.0.1:1',
      site: 'site_1',
      servingCaSpkiPin: old.servingCaPin,
      joinSigningKeyPin: old.signingPin,
      joinEncryptionKeyPin: old.encryptionPin,
    };
    await mkdir(path.dirname(paths.config), { recursive: true });
    await writeFile(paths.config, formatConfigToml(config), { mode: 0o600 });
    const out: string[] = [];
    const io = { out: (line: string) => void out.push(line), err: () => {}, env };
    await runDoctor({}, io);
    expect(out.find((line) => line.includes(' trust '))).toMatch(/^ok {3}trust {5}version 0 \(no trust\.json yet/);
    await mkdir(paths.identityDir, { recursive: true });
    const install = { servingCaPin: old.servingCaPin, joinSigningKeyPin: old.signingPin, joinEncryptionKeyPin: old.encryptionPin };
    const store = await TrustStore.open({ dir: paths.identityDir, install, log: () => {} });
    store.learnSigningKey(createPublicKey(old.signingKey));
    expect(await store.acceptEvent(signedBy(trustBody('node_1', 4, [next, old]), [old]), 'node_1')).toBe(true);
    out.length = 0;
    await runDoctor({}, io);
    const line = out.find((l) => l.includes(' trust '));
    expect(line).toMatch(/^ok {3}trust {5}version 4 \(.*trust\.json, 0600\)/);
    expect(line).toContain(`serving CA pins ${next.servingCaPin}, ${old.servingCaPin}`);
    expect(line).toContain(`join signing key pins ${next.signingPin}, ${old.signingPin}`);

    // --json: the same checks as one JSON line (what a bcd.doctor command answers), the text lines' order kept.
    const text = out.slice(1);
    out.length = 0;
    expect(await runDoctor({ json: true }, io)).toBe(1);
    expect(out).toHaveLength(1);
    const report = JSON.parse(out[0]!) as { version: string; ok: boolean; checks: Array<{ name: string; ok: boolean; detail: string }> };
    expect(report.ok).toBe(false);
    expect(report.checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(9)} ${c.detail}`)).toEqual(text);
  });
});
