import { spawnSync } from 'node:child_process';
import { createECDH, createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCsr } from '../server/join/crypto/csr';
import { generateNodeKeyAndCsr, p256JwkD, p256PrivateKeyFromScalar } from './keys';
import { p256PrivateScalar } from '../server/pki/ca/p256-private';

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
    for (const [name, made] of [
      ['named', generateNodeKeyAndCsr({ commonName: 'node' })],
      ['anonymous', generateNodeKeyAndCsr()],
    ] as const) {
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
    const script =
      "import { generateNodeKeyAndCsr } from './agent/keys.ts'; for (let i = 0; i < 10000; i++) generateNodeKeyAndCsr(); console.log('done');";
    const result = spawnSync(process.execPath, ['--max-semi-space-size=1', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: path.resolve(__dirname, '..'),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.signal, 'the key loop hung').toBeNull();
    expect(result.stdout.trim(), result.stderr).toBe('done');
  }, 90_000);
});

describe('the private scalar as a JWK d', () => {
  it('is always 32 bytes, left-padded: a crafted short scalar and the keys whose scalar has a leading zero', () => {
    const short = Buffer.alloc(31, 0xab);
    const d = Buffer.from(p256JwkD(short), 'base64url');
    expect(d.length).toBe(32);
    expect(d[0]).toBe(0);
    expect(d.subarray(1).equals(short)).toBe(true);
    expect(Buffer.from(p256JwkD(Buffer.alloc(32, 0x11)), 'base64url').equals(Buffer.alloc(32, 0x11))).toBe(true);
    expect(() => p256JwkD(Buffer.alloc(33))).toThrow();

    // createECDH drops leading zero bytes: about one key in 256 has a 31-byte scalar. Find some and import them.
    let found = 0;
    for (let i = 0; i < 20_000 && found < 3; i++) {
      const ecdh = createECDH('prime256v1');
      const point = ecdh.generateKeys();
      const scalar = ecdh.getPrivateKey();
      if (scalar.length === 32) continue;
      found++;
      const key = p256PrivateKeyFromScalar(point, scalar);
      const jwk = key.export({ format: 'jwk' });
      expect(Buffer.from(String(jwk.d), 'base64url').length).toBe(32);
      const stored = p256PrivateScalar(key);
      expect(stored.length).toBe(32);
      expect(stored.subarray(32 - scalar.length).equals(scalar)).toBe(true);
      expect(createPublicKey(key).export({ type: 'spki', format: 'der' }).subarray(-65).equals(point)).toBe(true);
    }
    expect(found).toBeGreaterThan(0);
  });
});
