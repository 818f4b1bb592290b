import { DomainError } from '../../../protocol/errors';
import type { Db } from '../../db/client';
import type { Principal } from '../../authz/principal';
import type { PkiKeyKind, RotationPhase } from './kinds';

/** A key brought from outside (a CA kept offline): PEM private key (PKCS#8) and, except for join-encryption, its certificate. */
export interface ImportedKey {
  privateKeyPem: string;
  certificatePem?: string;
}

/** One key's state as the PKI page, `pki rotation status` and `pki.rotation.status` show it. */
export interface KeyRotationStatus {
  kind: PkiKeyKind;
  /** The phase of the rotation under way, or `idle` (no rotation since the last was retired). */
  phase: 'idle' | Exclude<RotationPhase, 'retired'>;
  /** When the phase began (RFC 3339), or when the current key came into use for `idle`. */
  since: string;
  /** The pin of the key in use. */
  currentPin: string;
  /** The other key's pin while prepared (the next key) or active (the previous key). */
  otherPin: string | null;
  /** What the operator can do next: `prepare` (idle), `activate` (prepared), `retire` (active). */
  nextStep: 'prepare' | 'activate' | 'retire';
  /** The trust version the next step needs a node to hold, and how many nodes hold at least it (of how many). */
  readiness: { trustVersion: number; nodesReady: number; nodesTotal: number };
  /** For the node CA while active: valid, unrevoked certificates issued by the previous CA (retire is refused while > 0). */
  liveCertificatesOfPrevious?: number;
  /** The last finished rotation of this key, if any. */
  lastRetiredAt: string | null;
}

/** The whole picture: the trust version and each key. */
export interface RotationStatus {
  trustVersion: number;
  keys: KeyRotationStatus[];
}

/** The outcome of a step: the key's new state and the trust version it made. */
export interface RotationStepResult {
  kind: PkiKeyKind;
  phase: RotationPhase;
  trustVersion: number;
  status: KeyRotationStatus;
}

interface StepContext {
  /** BETTER_COMPUTE_SECRET: the bundle is opened and sealed again under it. */
  secret: string;
}

const notYet = (): never => {
  throw new DomainError('INVALID_STATE', 'Trust rotation is not available in this build');
};

/**
 * Prepares the next `kind` key: made by the server (or `from`, imported), sealed into the PKI bundle, trusted
 * everywhere and used nowhere. Root admins only; audited; publishes `security.pki.rotation.prepared`.
 *
 * @throws DomainError `ACCESS_DENIED` for a caller who is not a root admin; `INVALID_STATE` when a rotation of
 *   `kind` is already under way; `INVALID_ARGUMENT` for an imported key that is not usable.
 */
export async function prepareRotation(
  _db: Db,
  _principal: Principal,
  _input: { kind: PkiKeyKind; from?: ImportedKey } & StepContext,
): Promise<RotationStepResult> {
  return notYet();
}

/**
 * Makes the prepared `kind` key the one in use; its predecessor stays trusted. Publishes
 * `security.pki.rotation.activated`.
 *
 * @throws DomainError `INVALID_STATE` when no `kind` key is prepared.
 */
export async function activateRotation(
  _db: Db,
  _principal: Principal,
  _input: { kind: PkiKeyKind } & StepContext,
): Promise<RotationStepResult> {
  return notYet();
}

/**
 * Retires the previous `kind` key: trusted nowhere from now on. For the node CA, refused while a certificate it
 * issued is still valid unless `force` with a `reason` (audited). Publishes `security.pki.rotation.retired`.
 *
 * @throws DomainError `INVALID_STATE` when no `kind` rotation is active, or (node CA) live certificates remain.
 */
export async function retireRotation(
  _db: Db,
  _principal: Principal,
  _input: { kind: PkiKeyKind; force?: boolean; reason?: string } & StepContext,
): Promise<RotationStepResult> {
  return notYet();
}

/** Every key's phase, pins and readiness. Root admins only. */
export async function rotationStatus(_db: Db, _principal: Principal): Promise<RotationStatus> {
  return notYet();
}
