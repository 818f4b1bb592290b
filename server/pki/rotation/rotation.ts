import { DomainError } from '../../../protocol/errors';
import type { Db, Tx } from '../../db/client';
import type { Principal } from '../../authz/principal';
import { newId } from '../../ids';
import { PKI_KEY_LABELS, type PkiKeyKind, type RotationPhase } from './kinds';
import { activateInBundle, prepareInBundle, retireInBundle } from './bundle-steps';
import { currentKeyOf, importRotatingKey, makeRotatingKey, pinOfKey } from './new-key';
import { retireRefusal } from './retire-checks';
import { revokeCertificatesOf } from './rotation-sql';
import { keyStatus, readRotationStatus } from './status';
import { requireRootAdmin, runStep } from './step';

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
  /**
   * For the serving CA while active: gateways seen within the last minute still vouching with a leaf of the
   * previous CA whose new leaf has not called since (retire is refused while > 0).
   */
  gatewaysOnPrevious?: number;
  /** The last finished rotation of this key, if any. */
  lastRetiredAt: string | null;
}

/** The whole picture: the trust version and each key. */
export interface RotationStatus {
  trustVersion: number;
  keys: KeyRotationStatus[];
}

/** The outcome of a step: the key's new state and the trust version it made. */
interface RotationStepResult {
  kind: PkiKeyKind;
  phase: RotationPhase;
  trustVersion: number;
  status: KeyRotationStatus;
}

/** The columns a rotation step sets on its `pki_rotations` row. */
type RotationRowUpdate = NonNullable<Parameters<Tx['pkiRotation']['updateMany']>[0]>['data'];

interface StepContext {
  /** BETTER_COMPUTE_SECRET: the bundle is opened and sealed again under it. */
  secret: string;
}

/** The rotation of `kind` under way in `phase`, or INVALID_STATE. */
async function rotationUnderWay(db: Db, kind: PkiKeyKind, phase: 'prepared' | 'active') {
  const row = await db.pkiRotation.findFirst({ where: { kind, phase } });
  if (!row) throw new DomainError('INVALID_STATE', `No ${PKI_KEY_LABELS[kind]} rotation is ${phase}`);
  return row;
}

/** Runs one step of a rotation (see runStep) and answers the key's state after it. */
async function rotationStep(db: Db, principal: Principal, step: Parameters<typeof runStep>[2]): Promise<RotationStepResult> {
  const trustVersion = await runStep(db, principal, step);
  return { kind: step.kind, phase: step.phase, trustVersion, status: await keyStatus(db, principal, step.kind, step.secret) };
}

/**
 * Prepares the next `kind` key: made by the server (or `from`, imported), sealed into the PKI bundle, trusted
 * everywhere and used nowhere. Root admins only; audited; publishes `security.pki.rotation.prepared`.
 *
 * @throws DomainError `ACCESS_DENIED` for a caller who is not a root admin; `INVALID_STATE` when a rotation of
 *   `kind` is already under way; `INVALID_ARGUMENT` for an imported key that is not usable.
 */
export async function prepareRotation(
  db: Db,
  principal: Principal,
  input: { kind: PkiKeyKind; from?: ImportedKey } & StepContext,
): Promise<RotationStepResult> {
  const { kind } = input;
  await requireRootAdmin(db, principal);
  const next = input.from ? importRotatingKey(kind, input.from) : makeRotatingKey(kind);
  const nextPin = pinOfKey(next);
  let previousPin = '';
  return rotationStep(db, principal, {
    ...input,
    phase: 'prepared',
    change(bundle) {
      previousPin = pinOfKey(currentKeyOf(bundle, kind));
      if (previousPin === nextPin) throw new DomainError('INVALID_ARGUMENT', 'The imported key is the key in use', { field: 'from' });
      return prepareInBundle(bundle, kind, next);
    },
    async write({ tx, now, to }) {
      await tx.pkiRotation.create({
        data: {
          id: newId('pkr'),
          kind,
          phase: 'prepared',
          previousPin,
          nextPin,
          imported: input.from !== undefined,
          preparedAt: now,
          preparedBy: principal.actor,
          preparedVersion: to,
        },
      });
      return { pin: previousPin, nextPin, imported: input.from !== undefined };
    },
  });
}

/** Moves the rotation `id` on from phase `from`; CONFLICT when another step moved it meanwhile. */
async function advanceRotation(tx: Tx, id: string, from: RotationPhase, data: RotationRowUpdate) {
  const { count } = await tx.pkiRotation.updateMany({ where: { id, phase: from }, data });
  if (count !== 1) throw new DomainError('CONFLICT', 'The rotation changed meanwhile; check the rotation status');
}

/**
 * Makes the prepared `kind` key the one in use; its predecessor stays trusted. Publishes
 * `security.pki.rotation.activated`.
 *
 * @throws DomainError `INVALID_STATE` when no `kind` key is prepared.
 */
export async function activateRotation(
  db: Db,
  principal: Principal,
  input: { kind: PkiKeyKind } & StepContext,
): Promise<RotationStepResult> {
  const { kind } = input;
  await requireRootAdmin(db, principal);
  const rotation = await rotationUnderWay(db, kind, 'prepared');
  return rotationStep(db, principal, {
    ...input,
    phase: 'active',
    change: (bundle) => activateInBundle(bundle, kind),
    async write({ tx, now, to }) {
      await advanceRotation(tx, rotation.id, 'prepared', {
        phase: 'active',
        activatedAt: now,
        activatedBy: principal.actor,
        activatedVersion: to,
      });
      return { pin: rotation.nextPin, previousPin: rotation.previousPin };
    },
  });
}

/**
 * Retires the previous `kind` key: trusted nowhere from now on. For the node CA, refused while a certificate it
 * issued is still valid; for the serving CA, while a gateway seen within the last minute still vouches with a leaf
 * of the previous CA (it could never fetch its next leaf); either unless `force` with a `reason` (audited).
 * Publishes `security.pki.rotation.retired`.
 *
 * @throws DomainError `INVALID_STATE` when no `kind` rotation is active, or (node CA) live certificates remain, or
 *   (serving CA) gateways still serve the previous CA's leaf;
 *   `INVALID_ARGUMENT` for `force` without a reason.
 */
export async function retireRotation(
  db: Db,
  principal: Principal,
  input: { kind: PkiKeyKind; force?: boolean; reason?: string } & StepContext,
): Promise<RotationStepResult> {
  const { kind } = input;
  await requireRootAdmin(db, principal);
  const reason = input.reason?.trim() ?? '';
  if (input.force && !reason) throw new DomainError('INVALID_ARGUMENT', 'A forced retirement needs a reason', { field: 'reason' });
  if (reason.length > 500) throw new DomainError('INVALID_ARGUMENT', 'reason: at most 500 characters', { field: 'reason' });
  const rotation = await rotationUnderWay(db, kind, 'active');
  let forced: Record<string, number> | null = null;
  /** What retiring would strand (node CA: live certificates; serving CA: gateways), checked before the (slow) seal and again inside the transaction. */
  const check = async (tx: Parameters<typeof retireRefusal>[0]) => {
    const refusal = await retireRefusal(tx, kind, rotation.previousPin);
    if (refusal && !input.force) throw new DomainError('INVALID_STATE', refusal.message);
    forced = refusal ? refusal.details : null;
  };
  await check(db);
  return rotationStep(db, principal, {
    ...input,
    phase: 'retired',
    change: (bundle) => retireInBundle(bundle, kind),
    async write({ tx, now, to }) {
      await check(tx);
      await advanceRotation(tx, rotation.id, 'active', {
        phase: 'retired',
        retiredAt: now,
        retiredBy: principal.actor,
        retiredVersion: to,
        forcedReason: forced ? reason : null,
      });
      // Whatever a gateway still trusts until its next credentials call, the old CA's certificates end here.
      const revoked = forced && kind === 'node-ca' ? await revokeCertificatesOf(tx, rotation.previousPin) : 0;
      return {
        pin: rotation.nextPin,
        retiredPin: rotation.previousPin,
        ...(forced ? { forced: true, reason, ...(forced as Record<string, number>) } : {}),
        ...(revoked ? { revokedCertificates: revoked } : {}),
      };
    },
  });
}

/**
 * Every key's phase, pins and readiness. Root admins only. The pin of a key never rotated comes from the
 * process's loaded PKI (BETTER_COMPUTE_SECRET), or, given `secret` (a CLI run with the data directory's secret),
 * from the bundle opened with it.
 */
export async function rotationStatus(db: Db, principal: Principal, options: { secret?: string } = {}): Promise<RotationStatus> {
  await requireRootAdmin(db, principal);
  return readRotationStatus(db, undefined, options.secret);
}
