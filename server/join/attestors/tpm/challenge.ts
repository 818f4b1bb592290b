import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { makeCredential } from './make-credential';
import type { TpmRefusalReason } from './reasons';
import type { VerifiedTpmAttestation } from './verify';

/** How long a credential challenge can be answered. */
export const TPM_CHALLENGE_TTL_SECONDS = 60;
/** The size of the secret MakeCredential wraps. */
const SECRET_BYTES = 32;

/** What the server keeps of a challenge (never the secret itself, only its hash). */
export interface TpmChallengeRecord {
  readonly id: string;
  readonly secretSha256: Buffer;
  readonly csrSha256: string;
  readonly ekHash: string;
  readonly akName: Buffer;
  readonly expiresAt: Date;
  /** When round two consumed it; a used challenge never admits again. */
  readonly usedAt: Date | null;
}

/** Round one's answer body (signed as every join answer; docs/tpm-attestation.md). */
export interface TpmChallengeBody {
  status: 'challenge';
  challengeId: string;
  credentialBlob: string;
  encryptedSecret: string;
  csrSha256: string;
  expiresAt: number;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

/**
 * A credential-activation challenge for a verified round one: a fresh 32-byte secret wrapped by MakeCredential
 * to the EK for the AK's Name, so only the TPM holding both can recover it. Returns what to store and what to
 * answer; the secret itself is neither stored nor logged.
 */
export function issueTpmChallenge(
  facts: VerifiedTpmAttestation,
  csrSha256: string,
  now: Date,
  random: (size: number) => Buffer = randomBytes,
): { record: TpmChallengeRecord; body: TpmChallengeBody } {
  const secret = random(SECRET_BYTES);
  const wrapped = makeCredential(facts.ek, facts.akName, secret);
  const expiresAt = new Date(Math.floor(now.getTime() / 1000) * 1000 + TPM_CHALLENGE_TTL_SECONDS * 1000);
  const id = `tpmc_${random(16).toString('base64url')}`;
  return {
    record: { id, secretSha256: sha256(secret), csrSha256, ekHash: facts.ekHash, akName: facts.akName, expiresAt, usedAt: null },
    body: {
      status: 'challenge',
      challengeId: id,
      credentialBlob: wrapped.credentialBlob.toString('base64'),
      encryptedSecret: wrapped.encryptedSecret.toString('base64'),
      csrSha256,
      expiresAt: expiresAt.getTime() / 1000,
    },
  };
}

/**
 * Round two's activation against its stored challenge (`record`, null when none has the id): unexpired, unused,
 * made for this CSR, this EK and this AK, and the secret the TPM recovered (compared in constant time). The
 * caller consumes the challenge in the transaction that decides the join.
 */
export function checkActivation(
  record: TpmChallengeRecord | null,
  activation: { challengeId: string; secret: Buffer },
  facts: VerifiedTpmAttestation,
  csrSha256: string,
  now: Date,
): { ok: true } | { ok: false; reason: TpmRefusalReason } {
  if (!record || record.id !== activation.challengeId) return { ok: false, reason: 'tpm:challenge-unknown' };
  if (record.usedAt) return { ok: false, reason: 'tpm:challenge-used' };
  if (record.expiresAt.getTime() <= now.getTime()) return { ok: false, reason: 'tpm:challenge-expired' };
  if (record.csrSha256 !== csrSha256) return { ok: false, reason: 'tpm:challenge-csr' };
  if (record.ekHash !== facts.ekHash || !record.akName.equals(facts.akName)) return { ok: false, reason: 'tpm:challenge-binding' };
  if (!timingSafeEqual(record.secretSha256, sha256(activation.secret))) return { ok: false, reason: 'tpm:activation-secret' };
  return { ok: true };
}
