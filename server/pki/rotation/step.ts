import { DomainError } from '../../../protocol/errors';
import type { Db, Tx } from '../../db/client';
import type { Principal } from '../../authz/principal';
import { publishEvent, writeAudit } from '../../events/publish';
import { getRootTenant } from '../../tenants/tenants';
import type { PkiBundle } from '../bundle/bundle';
import { openPkiBundle, sealPkiBundle } from '../bundle/seal';
import { PKI_BUNDLE_ID } from '../bundle/store';
import type { PkiKeyKind, RotationPhase } from './kinds';
import { databaseNow, notifyPkiChanged } from './rotation-sql';

/** Each step's audit action and event type. */
const STEP_NAMES: Record<RotationPhase, [string, string]> = {
  prepared: ['pki.rotation.prepared', 'security.pki.rotation.prepared'],
  active: ['pki.rotation.activated', 'security.pki.rotation.activated'],
  retired: ['pki.rotation.retired', 'security.pki.rotation.retired'],
};

/** What a step's cleartext write gets: the transaction, the database's time and the versions around the step. */
interface StepWrite {
  tx: Tx;
  now: Date;
  /** The trust version the step read, and the one it makes (`from + 1`). */
  from: number;
  to: number;
}

/** One step as {@link runStep} runs it. */
interface Step {
  kind: PkiKeyKind;
  phase: RotationPhase;
  secret: string;
  /** The new bundle (throws `INVALID_STATE` when the step does not apply); runs before anything is written. */
  change(bundle: PkiBundle, version: number): PkiBundle | Promise<PkiBundle>;
  /** The `pki_rotations` row and any check that must hold in the transaction; returns the event's data. */
  write(step: StepWrite): Promise<Record<string, unknown>>;
}

/**
 * The root tenant's id when `principal` is one of its admins (the only callers who may touch the PKI).
 *
 * @throws DomainError `ACCESS_DENIED` for anyone else; `INVALID_CONFIG` when there is no root tenant yet.
 */
export async function requireRootAdmin(db: Tx, principal: Principal): Promise<string> {
  const root = await getRootTenant(db);
  if (!root) throw new DomainError('INVALID_CONFIG', 'The root tenant does not exist yet');
  if (principal.memberships.get(root.id) !== 'admin') {
    throw new DomainError('ACCESS_DENIED', 'Only admins of the root tenant rotate the PKI');
  }
  return root.id;
}

/**
 * Runs one rotation step. The bundle is opened and the new one sealed (scrypt, a fraction of a second each)
 * before the transaction; the transaction then writes the new seal only when `pki_bundles.trust_version` is
 * still the one read (compare-and-swap: of two concurrent steps one wins, the other gets `CONFLICT` or, read
 * after the first, `INVALID_STATE`), with the `pki_rotations` row, the audit row (`pki.rotation.<phase>`), the
 * event (`security.pki.rotation.<phase>`, root tenant) and `NOTIFY pki_changed`, all or nothing.
 *
 * @returns the trust version the step made.
 */
export async function runStep(db: Db, principal: Principal, step: Step): Promise<number> {
  const rootTenantId = await requireRootAdmin(db, principal);
  const row = await db.pkiBundle.findUnique({ where: { id: PKI_BUNDLE_ID } });
  if (!row) throw new DomainError('INVALID_CONFIG', 'No PKI bundle: run better-compute pki init --trust-domain <domain> first');
  const bundle = openPkiBundle(row.sealed, step.secret);
  if (bundle.trustDomain !== row.trustDomain) {
    throw new DomainError('INVALID_CONFIG', 'The stored PKI bundle does not match its row (trust domain differs)');
  }
  const from = row.trustVersion;
  const to = from + 1;
  const next = await step.change({ ...bundle, trustVersion: from }, from);
  const sealed = sealPkiBundle({ ...next, trustVersion: to }, step.secret);
  await db.$transaction(
    async (tx) => {
      const { count } = await tx.pkiBundle.updateMany({
        where: { id: PKI_BUNDLE_ID, trustVersion: from },
        data: { sealed: new Uint8Array(sealed), trustVersion: to },
      });
      if (count !== 1) {
        throw new DomainError(
          'CONFLICT',
          'The PKI changed while this step was prepared (another step?); check the rotation status and retry',
        );
      }
      const now = await databaseNow(tx);
      const data = await step.write({ tx, now, from, to });
      const details = { kind: step.kind, phase: step.phase, trustVersion: to, ...data };
      const [action, type] = STEP_NAMES[step.phase];
      await writeAudit(tx, { tenantId: rootTenantId, actor: principal.actor, action, resource: `compute-pki/${step.kind}`, data: details });
      await publishEvent(tx, { tenantId: rootTenantId, type, data: details });
      await notifyPkiChanged(tx, to);
    },
    { timeout: 30_000, maxWait: 30_000 },
  );
  return to;
}
