import { createHash, type KeyObject } from 'node:crypto';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { parseCsr, type ParsedCsr } from './crypto/csr';
import { JoinRefusal } from './crypto/refusal';
import { deriveHardwareKey, type HardwareKey } from './hardware/hardware-key';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { MAX_JOIN_BODY_BYTES } from '../../protocol/join-wire';
import { parseJoinBody } from './parse-join-body';
import { DEFAULT_ATTESTOR } from './attestors/names';
import { attestorNamed } from './attestors';
import type { PreparedToken } from './attestors/types';

/** A join whose request checked out without the database: ready for the admission transaction. */
export interface PreparedJoin {
  csr: ParsedCsr;
  /** The bearer token the join carries (sealed-token attestors), or null: the admission locks its row. */
  token: PreparedToken | null;
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
  /**
   * The address the join came from, set by the HTTP layer after preparation (`callerAddress`): the socket's
   * peer, a trusted proxy's client, or the peer the gateway vouched for. Recorded on join requests.
   */
  clientAddress?: string;
  /** What the attestor's preparation proved (AttestorPrepared.evidence): plain JSON values. */
  evidence?: unknown;
}

/** What a refusal before the database knows: the reason and the hashes the event may carry. */
export interface EarlyRefusal {
  reason: string;
  attestor: string;
  role: string;
  csrSha256: string | null;
  hardwareKey: string | null;
}

/** The keys a join's seal may be made to: the one in use, and every non-retired one (JoinCrypto.encryptionKeys). */
export type SealKeys = Pick<JoinCrypto, 'encryptionKey'> & { encryptionKeys?: readonly KeyObject[] };

/**
 * The CPU half of a join, done before any lock is taken, in the spec's order: parse the body's shared
 * fields, derive the hardware key, then the attestor's own preparation (for a token join: open the seal,
 * which must name this request's CSR by hash, and parse the bearer token), and verify the CSR's
 * self-signature. Any failure is returned as an EarlyRefusal.
 */
export function prepareJoin(raw: unknown, crypto: SealKeys): PreparedJoin | EarlyRefusal {
  let attestorName = DEFAULT_ATTESTOR;
  let role = 'node';
  let csrSha256: string | null = null;
  let hardware: HardwareKey | null = null;
  try {
    const body = parseJoinBody(raw);
    attestorName = body.attestor;
    role = body.role;
    hardware = deriveHardwareKey(body.claims);
    const trustedKey = hardware.key && hardware.trusted && hardware.hasUuidOrSerial ? hardware.key : null;
    // Only the attestors this server runs; others are refused by name.
    const attestor = attestorNamed(attestorName);
    if (!attestor) throw new JoinRefusal(`join:attestor`, 'attestor not configured');
    csrSha256 = createHash('sha256').update(body.csr).digest('hex');
    const prepared = attestor.prepare(
      { body: body.body, csrDer: body.csr, csrSha256, role },
      { encryptionKey: crypto.encryptionKey, encryptionKeys: crypto.encryptionKeys },
    );
    const csr = parseCsr(body.csr);
    return {
      csr,
      token: prepared.token,
      role,
      attestor: attestorName,
      claims: body.claims,
      hardware,
      trustedKey,
      spkiSha256: createHash('sha256').update(csr.spkiDer).digest(),
      ...(prepared.evidence !== undefined ? { evidence: prepared.evidence } : {}),
    };
  } catch (error) {
    if (!(error instanceof JoinRefusal)) throw error;
    return {
      reason: error.reason,
      attestor: attestorName,
      role,
      csrSha256,
      hardwareKey: hardware?.key?.toString('hex') ?? null,
    };
  }
}

/** `prepareJoin` of a request body's bytes: a body that is absent, too large or not JSON is refused like any bad join. */
export function prepareJoinBytes(body: Uint8Array | null, crypto: SealKeys): PreparedJoin | EarlyRefusal {
  let parsed: unknown;
  if (body && body.length <= MAX_JOIN_BODY_BYTES) {
    try {
      parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'));
    } catch {
      parsed = undefined;
    }
  }
  return prepareJoin(parsed, crypto);
}

/** Where a join's CPU half (body, CSR signature, seal, bearer token, hardware key) runs. */
export interface JoinPreparer {
  prepare(body: Uint8Array | null, crypto: SealKeys): Promise<PreparedJoin | EarlyRefusal>;
  close(): Promise<void>;
}

/** Prepares on the calling thread: what tests and the Next route handler use. */
export const inProcessPreparer: JoinPreparer = {
  prepare: async (body, crypto) => prepareJoinBytes(body, crypto),
  close: async () => {},
};

export const isPrepared = (value: PreparedJoin | EarlyRefusal): value is PreparedJoin => 'spkiSha256' in value;

/** The prepared join with each of its byte fields passed through `bytes`. */
function mapBytes(value: PreparedJoin, bytes: (field: Uint8Array) => Buffer): PreparedJoin {
  return {
    ...value,
    csr: { ...value.csr, spkiDer: bytes(value.csr.spkiDer) },
    token: value.token && { ...value.token, secretHash: bytes(value.token.secretHash) },
    hardware: { ...value.hardware, key: value.hardware.key && bytes(value.hardware.key) },
    trustedKey: value.trustedKey && bytes(value.trustedKey),
    spkiSha256: bytes(value.spkiSha256),
  };
}

/** A prepared join as it crosses a thread: every Buffer copied into an ArrayBuffer of its own, so none drags a shared pool slab along. */
export function packPrepared(value: PreparedJoin | EarlyRefusal): PreparedJoin | EarlyRefusal {
  return isPrepared(value) ? mapBytes(value, (field) => new Uint8Array(field) as Buffer) : value;
}

/** The receiving side of `packPrepared`: a structured clone turns Buffers into Uint8Arrays; this makes them Buffers again, without copying. */
export function revivePrepared(value: PreparedJoin | EarlyRefusal): PreparedJoin | EarlyRefusal {
  return isPrepared(value) ? mapBytes(value, (field) => Buffer.from(field.buffer, field.byteOffset, field.length)) : value;
}
