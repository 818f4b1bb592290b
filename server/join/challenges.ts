import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';

// JoinService's challenge store (join_challenges): a nonce answered in round one of an attestor's challenge
// round and consumed by round two. Shared by every instance (PostgreSQL), single use (round two deletes the
// row in its own admission transaction, whatever it decides), short-lived, bound to the attestor, the CSR's
// hash and a subject. The core issues nonces (admit.ts); attestors read and consume them with the helpers
// below, in their own `load` and `write`, so joins of other attestors pay nothing.

/** A challenge's default lifetime: long enough for one signature or TPM2_ActivateCredential and a retry. */
export const CHALLENGE_TTL_SECONDS = 120;
export const MAX_CHALLENGE_TTL_SECONDS = 600;

/** A fresh nonce: 32 random bytes, b64url (protocol.md). */
export const newNonce = (): string => randomBytes(32).toString('base64url');

/** What the store keeps of a nonce. */
const nonceSha256 = (nonce: string): Buffer => createHash('sha256').update(nonce, 'utf8').digest();

/** A nonce as the store issues it (round one). */
export interface IssuedChallenge {
  nonce: string;
  attestor: string;
  csrSha256: string;
  subject: string;
  answerSha256: Buffer | null;
  ttlSeconds: number;
}

/**
 * Inserts a batch's new challenges in one statement (and drops rows expired for an hour, so the table stays
 * small without a sweeper). Returns each challenge's expiry at the database's clock, in Unix seconds.
 */
export async function insertChallenges(client: pg.PoolClient, issued: IssuedChallenge[]): Promise<number[]> {
  const result = await client.query<{ h: string; expires: string }>(
    `WITH swept AS (DELETE FROM join_challenges WHERE expires_at < compute_now() - interval '1 hour')
     INSERT INTO join_challenges (nonce_sha256, attestor, csr_sha256, subject, answer_sha256, expires_at)
     SELECT n, a, c, s, x, compute_now() + make_interval(secs => t)
       FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::int[]) AS d(n, a, c, s, x, t)
     RETURNING encode(nonce_sha256, 'hex') AS h, floor(extract(epoch FROM expires_at))::bigint AS expires`,
    [
      issued.map((c) => nonceSha256(c.nonce)),
      issued.map((c) => c.attestor),
      issued.map((c) => c.csrSha256),
      issued.map((c) => c.subject),
      issued.map((c) => c.answerSha256),
      issued.map((c) => c.ttlSeconds),
    ],
  );
  const expiry = new Map(result.rows.map((r) => [r.h, Number(r.expires)]));
  return issued.map((c) => expiry.get(nonceSha256(c.nonce).toString('hex'))!);
}

/** A stored challenge as round two finds it (locked). */
export interface StoredChallenge {
  attestor: string;
  csrSha256: string;
  subject: string;
  answerSha256: Buffer | null;
  isExpired: boolean;
}

/**
 * Reads and locks the stored challenges of these nonces that `attestor` issued, keyed by nonce. A nonce that
 * is absent was never issued, already used, or issued to another attestor.
 */
export async function loadChallenges(client: pg.PoolClient, attestor: string, nonces: string[]): Promise<Map<string, StoredChallenge>> {
  const found = new Map<string, StoredChallenge>();
  if (!nonces.length) return found;
  const byHash = new Map(nonces.map((n) => [nonceSha256(n).toString('hex'), n]));
  const result = await client.query(
    `SELECT encode(nonce_sha256, 'hex') AS h, attestor, csr_sha256, subject, answer_sha256, expires_at <= compute_now() AS is_expired
       FROM join_challenges WHERE nonce_sha256 = ANY($1::bytea[]) AND attestor = $2 ORDER BY nonce_sha256 FOR UPDATE`,
    [[...byHash.keys()].map((h) => Buffer.from(h, 'hex')), attestor],
  );
  for (const r of result.rows) {
    found.set(byHash.get(r.h as string)!, {
      attestor: r.attestor,
      csrSha256: r.csr_sha256,
      subject: r.subject,
      answerSha256: r.answer_sha256,
      isExpired: r.is_expired,
    });
  }
  return found;
}

/** Deletes used nonces (round two, admitted or refused: a nonce is never good twice). */
export async function consumeChallenges(client: pg.PoolClient, nonces: string[]): Promise<void> {
  if (nonces.length) await client.query('DELETE FROM join_challenges WHERE nonce_sha256 = ANY($1::bytea[])', [nonces.map(nonceSha256)]);
}

/**
 * Why a stored challenge does not admit this round two, or null: unknown (never issued, already used, another
 * attestor's), expired, or bound to another CSR or subject.
 */
export function challengeMismatch(
  stored: StoredChallenge | undefined,
  expected: { csrSha256: string; subject: string },
): 'unknown' | 'expired' | 'csr' | 'subject' | null {
  if (!stored) return 'unknown';
  if (stored.isExpired) return 'expired';
  if (stored.csrSha256 !== expected.csrSha256) return 'csr';
  if (stored.subject !== expected.subject) return 'subject';
  return null;
}
