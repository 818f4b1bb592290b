import { generateKeyPairSync, sign, webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signEnvelope, verifyEnvelope } from './envelope';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const body = { status: 'pending', requestId: 'jreq_1', retryAfterSeconds: 30, csrSha256: 'ab'.repeat(32) };

describe('signEnvelope', () => {
  it('signs the exact body bytes with ES256 r||s', async () => {
    const envelope = signEnvelope(body, privateKey);
    expect(envelope.body).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(envelope.body, 'base64url').toString()).toBe(JSON.stringify(body));
    const sig = Buffer.from(envelope.sig, 'base64url');
    expect(sig.length).toBe(64);
    // WebCrypto ECDSA takes r||s too: an independent check of the encoding.
    const key = await webcrypto.subtle.importKey(
      'spki',
      publicKey.export({ type: 'spki', format: 'der' }),
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['verify'],
    );
    const ok = await webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, sig, Buffer.from(envelope.body, 'base64url'));
    expect(ok).toBe(true);
    expect(verifyEnvelope(envelope, publicKey)).toEqual(body);
  });

  it('refuses a tampered body, a tampered signature and another key', () => {
    const envelope = signEnvelope(body, privateKey);
    const otherBody = Buffer.from(JSON.stringify({ ...body, retryAfterSeconds: 1 })).toString('base64url');
    expect(() => verifyEnvelope({ ...envelope, body: otherBody }, publicKey)).toThrow(/does not verify/);
    const sig = Buffer.from(envelope.sig, 'base64url');
    sig[5]! ^= 1;
    expect(() => verifyEnvelope({ ...envelope, sig: sig.toString('base64url') }, publicKey)).toThrow(/does not verify/);
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    expect(() => verifyEnvelope(envelope, other)).toThrow(/does not verify/);
    expect(() => verifyEnvelope({ ...envelope, sig: envelope.sig.slice(0, 80) }, publicKey)).toThrow(/malformed/);
    expect(() => verifyEnvelope({ body: 1, sig: 2 } as never, publicKey)).toThrow(/malformed/);
  });

  it('refuses a signed body that is not JSON', () => {
    const bytes = Buffer.from('not json');
    const sig = sign('sha256', bytes, { key: privateKey, dsaEncoding: 'ieee-p1363' });
    expect(() => verifyEnvelope({ body: bytes.toString('base64url'), sig: sig.toString('base64url') }, publicKey)).toThrow(/not JSON/);
  });
});
