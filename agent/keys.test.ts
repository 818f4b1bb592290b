import { spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCsr } from '../server/join/crypto/csr';
import { generateNodeKeyAndCsr } from './keys';

describe('generateNodeKeyAndCsr', () => {
  it('makes a P-256 key and a CSR JoinService accepts', () => {
    const made = generateNodeKeyAndCsr({ commonName: 'r7-u12' });
    expect(made.privateKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(made.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(createPublicKey(createPrivateKey(made.privateKeyPem)).export({ type: 'spki', format: 'der' }).equals(made.spkiDer)).toBe(true);
    expect(made.spkiDer.length).toBe(91); // uncompressed point
    const parsed = parseCsr(made.csrDer);
    expect(parsed.csrSha256).toBe(made.csrSha256);
    expect(parsed.spkiDer.equals(made.spkiDer)).toBe(true);
    expect(generateNodeKeyAndCsr().csrSha256).not.toBe(made.csrSha256);
  });

  it('makes a CSR OpenSSL verifies', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'keys-'));
    for (const [name, made] of [['named', generateNodeKeyAndCsr({ commonName: 'node' })], ['anonymous', generateNodeKeyAndCsr()]] as const) {
      const file = path.join(dir, `${name}.der`);
      writeFileSync(file, made.csrDer);
      const result = spawnSync('openssl', ['req', '-in', file, '-inform', 'DER', '-verify', '-noout'], { encoding: 'utf8' });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout + result.stderr).toMatch(/verify OK/i);
    }
  });

  it('survives garbage collections in the middle of key generation (a Node 20 JWK-export deadlock)', () => {
    // A tiny young generation makes a collection land inside nearly every export; generateKeyPairSync
    // followed by a JWK export hung this loop within a few thousand keys.
    const script = "import { generateNodeKeyAndCsr } from './agent/keys.ts'; for (let i = 0; i < 10000; i++) generateNodeKeyAndCsr(); console.log('done');";
    const result = spawnSync(process.execPath, ['--max-semi-space-size=1', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: path.resolve(__dirname, '..'),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.signal, 'the key loop hung').toBeNull();
    expect(result.stdout.trim(), result.stderr).toBe('done');
  }, 90_000);
});
