import type { CommandIo, JoinSetup } from '../bcd/join-setup';
import { handOverIdentity } from './hand-over';
import { requireSystemUser } from './users';

/**
 * The end of a root `bcd join` under config.toml's `[helper]` table:
 * resolves the user first, so a missing user fails the join before the token is spent, and returns what hands the
 * identity directory to that user once the join succeeded. Null when there is no `[helper]` or bcd is not root.
 */
export async function helperHandOver(setup: JoinSetup, io: CommandIo): Promise<(() => Promise<void>) | null> {
  const helper = setup.existing?.helper;
  if (!helper || process.getuid?.() !== 0) return null;
  const user = await requireSystemUser(helper.user);
  return async () => {
    await handOverIdentity(setup.paths.identityDir, user);
    io.out(`handed ${setup.paths.identityDir} to ${user.name} for bcd node (bcd helper holds the TPM)`);
  };
}
