import { stat } from 'node:fs/promises';
import path from 'node:path';
import { readTrustFile, TRUST_FILE } from './store';
import type { InstallPins, TrustSet } from './trust-set';

const list = (pins: readonly string[]) => (pins.length ? pins.join(', ') : 'none');
const describe = (set: TrustSet) =>
  `serving CA pins ${list(set.servingCaPins)}; join signing key pins ${list(set.joinSigningKeyPins)}; join encryption key pins ${list(set.joinEncryptionKeyPins)}`;

/**
 * The `trust` line of `doctor`: the trust version held and its pins, and whether trust.json (beside identity.json)
 * is readable and 0600. No file is no set received yet: the install's pins are the set, at version 0.
 */
export async function trustCheck(dir: string, install: InstallPins): Promise<{ name: string; ok: boolean; detail: string }> {
  const file = path.join(dir, TRUST_FILE);
  let mode: number;
  try {
    mode = (await stat(file)).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      return { name: 'trust', ok: false, detail: `${file}: ${(error as Error).message}` };
    const pins = {
      version: 0,
      servingCaPins: install.servingCaPin ? [install.servingCaPin] : [],
      joinSigningKeyPins: install.joinSigningKeyPin ? [install.joinSigningKeyPin] : [],
      joinEncryptionKeyPins: install.joinEncryptionKeyPin ? [install.joinEncryptionKeyPin] : [],
      joinEncryptionJwks: [],
      commandTrustBundle: [],
    };
    return { name: 'trust', ok: true, detail: `version 0 (no ${TRUST_FILE} yet: the install's pins); ${describe(pins)}` };
  }
  let held: Awaited<ReturnType<typeof readTrustFile>>;
  try {
    held = await readTrustFile(dir);
  } catch (error) {
    return {
      name: 'trust',
      ok: false,
      detail: `${file} cannot be used (${(error as Error).message}); the agent trusts the install's pins`,
    };
  }
  if (!held) return { name: 'trust', ok: false, detail: `${file} disappeared while it was read` };
  if (mode !== 0o600) return { name: 'trust', ok: false, detail: `${file} is mode 0${mode.toString(8)}, not 0600: chmod 600 ${file}` };
  return { name: 'trust', ok: true, detail: `version ${held.set.version} (${file}, 0600); ${describe(held.set)}` };
}
