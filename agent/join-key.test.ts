import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { spkiPin } from '../protocol/pins';
import { loadJoinEncryptionKey } from './join-key';

const newJwk = () => {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { jwk: publicKey.export({ format: 'jwk' }), pin: spkiPin(publicKey) };
};
const current = newJwk();
const rotated = newJwk();
const dir = mkdtempSync(path.join(tmpdir(), 'join-key-'));

function fileWith(content: unknown): string {
  const file = path.join(dir, `${Math.random().toString(36).slice(2)}.jwk`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function serving(document: unknown, status = 200) {
  return vi.fn(async (_url: string | URL | Request) => new Response(JSON.stringify(document), { status })) as unknown as typeof fetch &
    ReturnType<typeof vi.fn>;
}

describe('loadJoinEncryptionKey', () => {
  it('uses join-encryption.jwk when it matches the pin, without fetching', async () => {
    const fetch = serving({});
    const key = await loadJoinEncryptionKey({ jwkPath: fileWith(current.jwk), pin: current.pin, serverUrl: 'https://cp', fetch });
    expect(key).toEqual({ jwk: { kty: 'EC', crv: 'P-256', x: current.jwk.x, y: current.jwk.y }, source: 'file' });
    expect(fetch).not.toHaveBeenCalled();
  });

  it('falls back to the well-known document when the file is missing or rotated', async () => {
    const fetch = serving({ name: 'better-compute', join: { encryptionJwk: rotated.jwk } });
    const missing = await loadJoinEncryptionKey({
      jwkPath: path.join(dir, 'absent.jwk'),
      pin: rotated.pin,
      serverUrl: 'https://cp.example.com/',
      fetch,
    });
    expect(missing.source).toBe('well-known');
    expect(fetch.mock.calls[0]![0]).toBe('https://cp.example.com/api/compute/.well-known/better-compute');
    const stale = await loadJoinEncryptionKey({
      jwkPath: fileWith(current.jwk),
      pin: rotated.pin,
      serverUrl: 'https://cp',
      basePath: '/compute',
      fetch,
    });
    expect(stale).toMatchObject({ source: 'well-known', jwk: { x: rotated.jwk.x } });
    expect(fetch.mock.calls[1]![0]).toBe('https://cp/compute/.well-known/better-compute');
  });

  it('with refuseMismatchedFile (bcd), a present file that does not match fails without fetching; a missing one still falls back', async () => {
    const fetch = serving({ join: { encryptionJwk: rotated.jwk } });
    await expect(
      loadJoinEncryptionKey({
        jwkPath: fileWith(current.jwk),
        pin: rotated.pin,
        serverUrl: 'https://cp',
        fetch,
        refuseMismatchedFile: true,
      }),
    ).rejects.toThrow(
      /\.jwk does not match join_encryption_key_pin; after a join key rotation, generate the install script again and rerun it/,
    );
    await expect(
      loadJoinEncryptionKey({
        jwkPath: fileWith('{not json'),
        pin: rotated.pin,
        serverUrl: 'https://cp',
        fetch,
        refuseMismatchedFile: true,
      }),
    ).rejects.toThrow(/cannot be read/);
    expect(fetch).not.toHaveBeenCalled();
    const missing = await loadJoinEncryptionKey({
      jwkPath: path.join(dir, 'absent.jwk'),
      pin: rotated.pin,
      serverUrl: 'https://cp',
      fetch,
      refuseMismatchedFile: true,
    });
    expect(missing.source).toBe('well-known');
  });

  it('refuses a published key that does not match the pin', async () => {
    const fetch = serving({ join: { encryptionJwk: current.jwk } });
    await expect(loadJoinEncryptionKey({ pin: rotated.pin, serverUrl: 'https://cp', fetch })).rejects.toThrow(
      /does not match join_encryption_key_pin/,
    );
  });

  it('says why when there is nothing to fall back to', async () => {
    await expect(loadJoinEncryptionKey({ jwkPath: fileWith(current.jwk), pin: rotated.pin })).rejects.toThrow(
      /does not match.*no server URL/,
    );
    await expect(loadJoinEncryptionKey({ jwkPath: path.join(dir, 'absent.jwk'), pin: rotated.pin })).rejects.toThrow(/does not exist/);
    await expect(loadJoinEncryptionKey({ jwkPath: fileWith('{not json'), pin: rotated.pin })).rejects.toThrow(/cannot be read/);
    const privateJwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
    await expect(loadJoinEncryptionKey({ jwkPath: fileWith(privateJwk), pin: rotated.pin })).rejects.toThrow(/not a public P-256 JWK/);
    await expect(loadJoinEncryptionKey({ pin: rotated.pin, serverUrl: 'https://cp', fetch: serving({}, 503) })).rejects.toThrow(/HTTP 503/);
    await expect(
      loadJoinEncryptionKey({ pin: rotated.pin, serverUrl: 'https://cp', fetch: serving({ name: 'better-compute' }) }),
    ).rejects.toThrow(/no join section/);
    await expect(
      loadJoinEncryptionKey({ pin: rotated.pin, serverUrl: 'https://cp', fetch: serving({ join: { encryptionJwk: { kty: 'RSA' } } }) }),
    ).rejects.toThrow(/no usable join.encryptionJwk/);
  });
});
