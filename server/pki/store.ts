import { DomainError } from '../../protocol/errors';
import type { Tx } from '../db/client';
import { createPkiBundle, type PkiBundle } from './bundle';
import { openPkiBundle, sealPkiBundle } from './bundle-seal';

/** The id of the deployment's one PKI bundle row in `pki_bundles`. */
export const PKI_BUNDLE_ID = 'default';

/**
 * Creates the deployment's PKI and stores it sealed under `secret` (`BETTER_COMPUTE_SECRET`) as row
 * {@link PKI_BUNDLE_ID}. It never replaces an existing bundle: every node certificate and pinned install
 * depends on it. The insert itself decides (`ON CONFLICT DO NOTHING`), not a prior read, so of two concurrent
 * inits exactly one wins; the statement does not fail, so a surrounding transaction stays usable.
 *
 * @returns the new bundle (print its pins with `installPins`).
 * @throws DomainError `ALREADY_EXISTS` when a bundle is stored (nothing changes); `INVALID_ARGUMENT` for a bad
 *   trust domain or a secret too weak to seal under (`secretWeakness`).
 */
export async function initPki(db: Tx, options: { trustDomain: string; secret: string; now?: Date }): Promise<PkiBundle> {
  const bundle = createPkiBundle({ trustDomain: options.trustDomain, now: options.now });
  const sealed = sealPkiBundle(bundle, options.secret);
  const { count } = await db.pkiBundle.createMany({
    data: [{ id: PKI_BUNDLE_ID, trustDomain: bundle.trustDomain, sealed: new Uint8Array(sealed) }],
    skipDuplicates: true,
  });
  if (count !== 1) {
    throw new DomainError(
      'ALREADY_EXISTS',
      'A PKI bundle already exists for this deployment (pki show prints its pins); refusing to overwrite it',
    );
  }
  return bundle;
}

/**
 * Loads and opens the deployment's PKI bundle.
 *
 * @throws DomainError `INVALID_CONFIG` when there is none (or the row and bundle disagree); `INVALID_ARGUMENT`
 *   (field `BETTER_COMPUTE_SECRET`) when `secret` does not open it.
 */
export async function loadPki(db: Tx, secret: string): Promise<PkiBundle> {
  const row = await db.pkiBundle.findUnique({ where: { id: PKI_BUNDLE_ID } });
  if (!row) {
    throw new DomainError('INVALID_CONFIG', 'No PKI bundle: run better-compute pki init --trust-domain <domain> first');
  }
  const bundle = openPkiBundle(row.sealed, secret);
  if (bundle.trustDomain !== row.trustDomain) {
    throw new DomainError('INVALID_CONFIG', 'The stored PKI bundle does not match its row (trust domain differs)');
  }
  return bundle;
}

/** Whether the deployment has a PKI bundle (without opening it). */
export async function hasPki(db: Tx): Promise<boolean> {
  const row = await db.pkiBundle.findUnique({ where: { id: PKI_BUNDLE_ID }, select: { id: true } });
  return row !== null;
}
