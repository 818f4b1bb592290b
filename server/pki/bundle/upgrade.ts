import type { Tx } from '../../db/client';
import { DomainError } from '../../../protocol/errors';
import type { PkiBundle } from './bundle';
import { isCurrentSeal, openPkiBundle, sealPkiBundle } from './seal';
import { rotateSigningCertificate } from './signing-certificate';
import { PKI_BUNDLE_ID } from './store';

/** What {@link upgradeStoredPki} changed. */
interface PkiUpgrade {
  bundle: PkiBundle;
  /** The row was written again: a new seal (current layout and KDF parameters, or the new secret). */
  resealed: boolean;
  /** The signing certificate was node-CA-issued and is now self-signed (same key, same pins). */
  rotatedSigningCertificate: boolean;
  /** The bundle opened only with `previousSecret` and is now sealed under `secret`. */
  changedSecret: boolean;
}

/**
 * Brings the stored PKI bundle up to date on start: opens it with `secret` (or, when that fails and one is given,
 * with `previousSecret`, the way to move an install to a new secret), replaces a node-CA-issued signing
 * certificate by a self-signed one for the same key, and re-seals it when anything changed or the seal is of
 * an older layout or weaker KDF parameters.
 *
 * The new seal is written by ONE compare-and-swap UPDATE (`WHERE sealed = <the bytes read>`): a crash leaves
 * either the old row or the new one, both complete and both opened by the secrets that made them; a concurrent
 * start that upgraded first makes this UPDATE match nothing, and the row it wrote is read back and opened.
 *
 * @throws DomainError `INVALID_CONFIG` when there is no bundle; `INVALID_ARGUMENT` (field
 *   `BETTER_COMPUTE_SECRET`) when neither secret opens it, or `secret` is too weak to seal under.
 */
export async function upgradeStoredPki(db: Tx, options: { secret: string; previousSecret?: string }): Promise<PkiUpgrade> {
  const { secret, previousSecret } = options;
  for (let attempt = 0; attempt < 3; attempt++) {
    const row = await db.pkiBundle.findUnique({ where: { id: PKI_BUNDLE_ID } });
    if (!row) throw new DomainError('INVALID_CONFIG', 'No PKI bundle: run better-compute pki init --trust-domain <domain> first');
    let opened: PkiBundle;
    let changedSecret = false;
    try {
      opened = openPkiBundle(row.sealed, secret);
    } catch (error) {
      if (!previousSecret || !(error instanceof DomainError) || error.code !== 'INVALID_ARGUMENT') throw error;
      opened = openPkiBundle(row.sealed, previousSecret);
      changedSecret = true;
    }
    if (opened.trustDomain !== row.trustDomain) {
      throw new DomainError('INVALID_CONFIG', 'The stored PKI bundle does not match its row (trust domain differs)');
    }
    const rotated = rotateSigningCertificate(opened);
    const bundle = rotated ?? opened;
    if (!rotated && !changedSecret && isCurrentSeal(row.sealed)) {
      return { bundle, resealed: false, rotatedSigningCertificate: false, changedSecret: false };
    }
    const sealed = sealPkiBundle(bundle, secret);
    const { count } = await db.pkiBundle.updateMany({
      where: { id: PKI_BUNDLE_ID, sealed: row.sealed },
      data: { sealed: new Uint8Array(sealed) },
    });
    if (count === 1) return { bundle, resealed: true, rotatedSigningCertificate: rotated !== null, changedSecret };
    // Another start re-sealed it between our read and our write: read its row and check again.
  }
  throw new DomainError('CONFLICT', 'The PKI bundle kept changing while it was being upgraded; start again');
}
