import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newId } from '../ids';
import { createdJoinToken, joinTokenRecord } from '../../protocol/api/token-schemas';
import { formatJoinToken, hashTokenSecret, newTokenSecret, parseJoinToken, tokenSecretMatches } from './secret';

describe('join token secrets', () => {
  it('mints 256-bit base64url secrets in the bearer form bcjt_<id>.<secret>', () => {
    const secret = newTokenSecret();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    const id = newId('jt');
    const token = formatJoinToken(id, secret);
    expect(token).toBe(`bcjt_${id}.${secret}`);
    expect(parseJoinToken(token)).toEqual({ id, secret });
  });

  it('parses strictly', () => {
    const id = newId('jt');
    const secret = newTokenSecret();
    const good = formatJoinToken(id, secret);
    for (const bad of [
      '',
      `bcjt_${id}`,
      `bcjt_${id}.`,
      `${good} `,
      ` ${good}`,
      `${good}\n`,
      `bcak_${id}.${secret}`,
      `bcjt_${id.toUpperCase()}.${secret}`,
      `bcjt_jt_${'i'.repeat(26)}.${secret}`, // i is not Crockford
      `bcjt_${id}.${secret}=`,
      `bcjt_${id}.${secret.slice(0, 42)}`,
      `bcjt_${id}.${secret}A`,
      `bcjt_${id}.${secret.slice(0, 42)}B`, // non-zero trailing bits: not the canonical spelling
      `bcjt_${id}.${secret.slice(0, 42)}+`,
      `bcjt_${id}..${secret}`,
    ]) {
      expect(parseJoinToken(bad), JSON.stringify(bad)).toBeNull();
    }
    expect(parseJoinToken(undefined as unknown as string)).toBeNull();
  });

  it('stores and compares only SHA-256 of the secret', () => {
    const secret = newTokenSecret();
    const hash = hashTokenSecret(secret);
    expect(hash.equals(createHash('sha256').update(secret).digest())).toBe(true);
    expect(tokenSecretMatches(hash, secret)).toBe(true);
    expect(tokenSecretMatches(hash, newTokenSecret())).toBe(false);
    expect(tokenSecretMatches(hash.subarray(0, 16), secret)).toBe(false);
  });

  it('answers cannot carry a hash or anything else the record does not name', () => {
    const record = {
      id: newId('jt'),
      poolId: null,
      siteId: 'site_1',
      role: 'node',
      usesLeft: 1,
      maxUses: 1,
      expect: null,
      allowReclaim: false,
      hosted: null,
      expiresAt: new Date().toISOString(),
      createdAt: new Date().toISOString(),
      revokedAt: null,
      state: 'live',
      createdBy: 'op_1',
      createdByEmail: null,
      lastUsedAt: null,
      revokedBy: null,
      revokedByEmail: null,
      name: null,
      description: null,
      labels: {},
    };
    expect(joinTokenRecord.parse(record)).toEqual(record);
    expect(() => joinTokenRecord.parse({ ...record, secretHash: 'ab' })).toThrow();
    expect(() => joinTokenRecord.parse({ ...record, expect: { serial: 'x', secretHash: 'ab' } })).toThrow();
    expect(() => createdJoinToken.parse({ ...record, token: 't', secret_hash: 'ab' })).toThrow();
  });
});

describe('the leak check the integration tests use', () => {
  it('finds the token, the secret and the hash in hex, base64 and base64url, in any case', async () => {
    const { findSecretLeak } = await import('../../test/fixtures');
    const secret = newTokenSecret();
    const token = formatJoinToken(newId('jt'), secret);
    const hash = hashTokenSecret(secret);
    expect(findSecretLeak([token], ['nothing here', token.slice(0, 40)])).toBeUndefined();
    for (const text of [
      `x ${token} y`,
      `secret=${secret}`,
      `\\x${hash.toString('hex').toUpperCase()}`,
      hash.toString('base64'),
      `"${hash.toString('base64url')}"`,
    ]) {
      expect(findSecretLeak([token], ['clean', text])).toBe(text);
    }
  });
});
