import { chmod, lchown, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { SystemUser } from './users';

/**
 * Hands the identity directory to the `[helper]` user at the end of a root `bcd join`: the directory (0700) and
 * every file in it (identity.json, node.key, ak.key, trust.json, ...) become theirs, so `bcd node`, running as
 * that user, reads them and replaces them at renewal. For a TPM-held key those files hold only TPM-wrapped
 * blobs and certificates; a software `node.key` is the key, and is the user's to sign with. Links are not
 * followed (lchown), and nothing outside the directory is touched.
 */
export async function handOverIdentity(identityDir: string, user: SystemUser): Promise<void> {
  await lchown(identityDir, user.uid, user.gid);
  await chmod(identityDir, 0o700);
  for (const entry of await readdir(identityDir, { withFileTypes: true })) {
    if (entry.isFile() || entry.isSymbolicLink()) await lchown(path.join(identityDir, entry.name), user.uid, user.gid);
  }
}
