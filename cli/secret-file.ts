import { open, unlink, type FileHandle } from 'node:fs/promises';
import { DomainError } from '../protocol/errors';

/**
 * Reserves a new 0600 file for a secret before the secret exists, so a path that is taken fails first
 * and nothing is minted only to be lost. `write` fills it; on failure the empty file is removed.
 */
export async function writeNewSecretFile(path: string, produce: () => Promise<string | null>): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new DomainError('ALREADY_EXISTS', `${path} already exists; --out never writes over a file`, { field: 'out' });
    }
    throw new DomainError('INVALID_ARGUMENT', `Cannot create ${path}: ${(error as Error).message}`, { field: 'out' });
  }
  let ok = false;
  try {
    const secret = await produce();
    if (secret !== null) {
      await handle.writeFile(secret.endsWith('\n') ? secret : secret + '\n');
      await handle.sync();
      ok = true;
    }
  } finally {
    await handle.close();
    if (!ok) await unlink(path).catch(() => {});
  }
}
