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
});
