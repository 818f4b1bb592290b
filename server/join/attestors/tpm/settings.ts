import { DomainError } from '../../../../protocol/errors';
import { editAllowList, MAX_EK_ALLOW_LIST, tpmSiteSettings, type TpmSiteSettings } from '../../../../protocol/api/tpm-settings';
import type { updateSiteInput } from '../../../../protocol/api/site-schemas';
import type { z } from 'zod';
import type { AttestorSiteSettings } from '../hooks';

// The tpm attestor's settings live in protocol/ (pool and site schemas share them with the console).
export { editAllowList, tpmSiteSettings, type TpmSiteSettings } from '../../../../protocol/api/tpm-settings';

type TpmChange = z.infer<typeof updateSiteInput>['tpm'];

/** The `tpm` keys a site's row sets itself (read through `current`, the settings with defaults filled in). */
function explicitTpmSettings(stored: unknown, current: TpmSiteSettings): Partial<TpmSiteSettings> {
  const raw = stored !== null && typeof stored === 'object' ? (stored as Record<string, unknown>) : {};
  return {
    ...('enrollment' in raw ? { enrollment: current.enrollment } : {}),
    ...('pendingTtlSeconds' in raw ? { pendingTtlSeconds: current.pendingTtlSeconds } : {}),
  };
}

/**
 * A site's `tpm` settings: whether an unlisted TPM waits in the queue (`enrollment`), how long, and the EK hashes
 * admitted without an operator, edited in place (`addEkHashes`, `removeEkHashes`; at most MAX_EK_ALLOW_LIST).
 * Only what was set is stored (a default left unset follows the product's default, e.g. enrollment off); the
 * audit row names the allow-list's changes, not the whole list.
 */
export const tpmSiteSettingsHook: AttestorSiteSettings = {
  field: 'tpm',
  read: tpmSiteSettings,
  update(stored, change) {
    const current = tpmSiteSettings(stored);
    const { addEkHashes, removeEkHashes, ...tpmChanges } = (change as TpmChange) ?? {};
    const tpm = {
      ...explicitTpmSettings(stored, current),
      ...tpmChanges,
      ekAllowList: editAllowList(current.ekAllowList, addEkHashes, removeEkHashes),
    };
    if (tpm.ekAllowList.length > MAX_EK_ALLOW_LIST) {
      throw new DomainError('INVALID_ARGUMENT', `tpm.addEkHashes: a site lists at most ${MAX_EK_ALLOW_LIST} EK hashes`, {
        field: 'tpm.addEkHashes',
      });
    }
    const effective = tpmSiteSettings(tpm);
    const audit = {
      enrollment: effective.enrollment,
      pendingTtlSeconds: effective.pendingTtlSeconds,
      addEkHashes: addEkHashes ?? [],
      removeEkHashes: removeEkHashes ?? [],
    };
    return { stored: tpm, audit };
  },
};
