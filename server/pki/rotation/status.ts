import { X509Certificate } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import { spkiPin } from '../../../protocol/pins';
import type { Db } from '../../db/client';
import type { Principal } from '../../authz/principal';
import { loadPkiRuntime, PkiSource } from '../../join/join-runtime';
import { PKI_BUNDLE_ID } from '../bundle/store';
import { PKI_KEY_KINDS, type PkiKeyKind } from './kinds';
import type { KeyRotationStatus, RotationStatus } from './rotation';
import { gatewaysOnServingCa } from '../../gateway-credentials/gateway-calls';
import { liveCertificatesOf, nodesHolding } from './rotation-sql';
import { requireRootAdmin } from './step';
import { trustStateOf, type TrustState } from './trust-state';

type RotationRow = Awaited<ReturnType<Db['pkiRotation']['findFirst']>> & object;

/** The pin of the `kind` key in use in a trust state (for keys that were never rotated). */
function pinInUse(trust: TrustState, kind: PkiKeyKind): string {
  switch (kind) {
    case 'serving-ca':
      return trust.servingCaPins[0]!;
    case 'join-signing':
      return trust.signingKeys[0]!.pin;
    case 'join-encryption':
      return trust.encryptionKeys[0]!.pin;
    case 'node-ca':
      return trust.nodeCas[0]!.pin;
    case 'command-signing':
      return spkiPin(new X509Certificate(Buffer.from(trust.commandTrustBundle[0]!, 'base64')).publicKey);
  }
}

/**
 * One key's status from its rotation rows (the latest first). Pins come from the rows, which every step
 * writes in its transaction; only a key never rotated takes its pin from the loaded PKI (it has not changed
 * since `pki init`).
 */
async function statusOf(
  db: Db,
  kind: PkiKeyKind,
  rows: RotationRow[],
  context: { trustVersion: number; createdAt: Date; trust: () => Promise<TrustState> },
): Promise<KeyRotationStatus> {
  const latest = rows[0];
  const lastRetired = rows.find((r) => r.phase === 'retired') ?? null;
  const lastRetiredAt = lastRetired?.retiredAt?.toISOString() ?? null;
  if (latest && latest.phase !== 'retired') {
    const prepared = latest.phase === 'prepared';
    const needed = prepared ? latest.preparedVersion : (latest.activatedVersion ?? latest.preparedVersion);
    const status: KeyRotationStatus = {
      kind,
      phase: prepared ? 'prepared' : 'active',
      since: (prepared ? latest.preparedAt : (latest.activatedAt ?? latest.preparedAt)).toISOString(),
      currentPin: prepared ? latest.previousPin : latest.nextPin,
      otherPin: prepared ? latest.nextPin : latest.previousPin,
      nextStep: prepared ? 'activate' : 'retire',
      readiness: { trustVersion: needed, ...(await nodesHolding(db, needed)) },
      lastRetiredAt,
    };
    if (!prepared && kind === 'node-ca') status.liveCertificatesOfPrevious = await liveCertificatesOf(db, latest.previousPin);
    if (!prepared && kind === 'serving-ca') status.gatewaysOnPrevious = (await gatewaysOnServingCa(db, latest.previousPin)).count;
    return status;
  }
  return {
    kind,
    phase: 'idle',
    since: (lastRetired?.activatedAt ?? context.createdAt).toISOString(),
    currentPin: lastRetired ? lastRetired.nextPin : pinInUse(await context.trust(), kind),
    otherPin: null,
    nextStep: 'prepare',
    readiness: { trustVersion: context.trustVersion, ...(await nodesHolding(db, context.trustVersion)) },
    lastRetiredAt,
  };
}

/**
 * Every key's phase, pins and readiness (no authorization: callers check it). A node is ready for a step when
 * the trust version it last reported is at least the step's: for `activate`, the version `prepare` made (the
 * set that holds the new key); for `retire`, the version `activate` made; for `prepare`, the current one.
 */
export async function readRotationStatus(db: Db, only?: PkiKeyKind, secret?: string): Promise<RotationStatus> {
  const bundle = await db.pkiBundle.findUnique({ where: { id: PKI_BUNDLE_ID }, select: { trustVersion: true, createdAt: true } });
  if (!bundle) throw new DomainError('INVALID_CONFIG', 'No PKI bundle: run better-compute pki init --trust-domain <domain> first');
  const kinds = only ? [only] : PKI_KEY_KINDS;
  const rows = await db.pkiRotation.findMany({ where: { kind: { in: [...kinds] } }, orderBy: { preparedAt: 'desc' } });
  let trust: Promise<TrustState> | undefined;
  const context = {
    trustVersion: bundle.trustVersion,
    createdAt: bundle.createdAt,
    trust: () =>
      (trust ??= (secret ? new PkiSource(db, () => secret).load() : loadPkiRuntime(db)).then((runtime) => {
        if (!runtime) throw new DomainError('INVALID_CONFIG', 'The PKI cannot be opened here (is BETTER_COMPUTE_SECRET set?)');
        return trustStateOf(runtime);
      })),
  };
  const keys: KeyRotationStatus[] = [];
  for (const kind of kinds)
    keys.push(
      await statusOf(
        db,
        kind,
        rows.filter((r) => r.kind === kind),
        context,
      ),
    );
  return { trustVersion: bundle.trustVersion, keys };
}

/** One key's status, for a step's result (the caller is a root admin: the step checked). */
export async function keyStatus(db: Db, principal: Principal, kind: PkiKeyKind, secret?: string): Promise<KeyRotationStatus> {
  await requireRootAdmin(db, principal);
  return (await readRotationStatus(db, kind, secret)).keys[0]!;
}
