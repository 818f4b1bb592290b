import { createHash } from 'node:crypto';
import type { JoinCrypto } from '../pki/join-crypto';
import { hashTokenSecret, parseJoinToken } from '../tokens/secret';
import { parseCsr, type ParsedCsr } from './crypto/csr';
import { JoinRefusal } from './crypto/refusal';
import { openSeal } from './crypto/seal';
import { deriveHardwareKey, type HardwareKey } from './hardware/hardware-key';
import type { HardwareClaims } from './hardware/claims';
import { parseJoinBody } from './wire';

/** A join whose request checked out without the database: ready for the admission transaction. */
export interface PreparedJoin {
  csr: ParsedCsr;
  tokenId: string;
  secret: string;
  secretHash: Buffer;
  role: string;
  attestor: string;
  claims: HardwareClaims;
  hardware: HardwareKey;
  /**
   * The hardware key when it can name a machine: trusted (two independent identifiers) and with a product
   * UUID or a serial. A machine admitted only through a token's `expect` binding joins with an untrusted
   * key, and an untrusted key never reclaims.
   */
  trustedKey: Buffer | null;
  /** SHA-256 of the CSR's key, as `node_certs.spki_sha256` stores it. */
  spkiSha256: Buffer;
}

/** What a refusal before the database knows: the reason and the hashes the event may carry. */
export interface EarlyRefusal {
  reason: string;
  attestor: string;
  role: string;
  csrSha256: string | null;
  hardwareKey: string | null;
}

/**
 * The CPU half of a join, done before any lock is taken: parse the body, verify the CSR's
 * self-signature, open the seal (which must name this CSR), parse the bearer token and derive the
 * hardware key. Throws an EarlyRefusal-carrying JoinRefusal on any failure.
 */
export function prepareJoin(raw: unknown, crypto: JoinCrypto): PreparedJoin | EarlyRefusal {
  let attestor = 'join-token';
  let role = 'node';
  let csr: ParsedCsr | null = null;
  let hardware: HardwareKey | null = null;
  let trustedKey: Buffer | null = null;
  try {
    const body = parseJoinBody(raw);
    attestor = body.attestor;
    role = body.role;
    hardware = deriveHardwareKey(body.claims);
    trustedKey = hardware.key && hardware.trusted && hardware.hasUuidOrSerial ? hardware.key : null;
    // Only the join-token attestor is configured on this server; others are refused by name.
    if (attestor !== 'join-token') throw new JoinRefusal(`join:attestor`, 'attestor not configured');
    csr = parseCsr(body.csr);
    const bearer = openSeal(body.sealedToken, { encryptionKey: crypto.encryptionKey, csrSha256: csr.csrSha256 });
    const token = parseJoinToken(bearer);
    if (!token) throw new JoinRefusal('join-token:malformed', 'not a bcjt_ token');
    return {
      csr,
      tokenId: token.id,
      secret: token.secret,
      secretHash: hashTokenSecret(token.secret),
      role,
      attestor,
      claims: body.claims,
      hardware,
      trustedKey,
      spkiSha256: createHash('sha256').update(csr.spkiDer).digest(),
    };
  } catch (error) {
    if (!(error instanceof JoinRefusal)) throw error;
    return {
      reason: error.reason,
      attestor,
      role,
      csrSha256: csr?.csrSha256 ?? null,
      hardwareKey: hardware?.key?.toString('hex') ?? null,
    };
  }
}

export const isPrepared = (value: PreparedJoin | EarlyRefusal): value is PreparedJoin => 'tokenId' in value;
