import type { Principal } from '../../server/authz/principal';
import type { Db } from '../../server/db/client';
import { createJoinToken } from '../../server/tokens/join-tokens';

/**
 * One-use join tokens of `poolId` (or the pool a call names), an hour long, as an admin makes them in the
 * console; each gets an idempotency key of its own, `label-<n>`.
 */
export function joinTokenMaker(
  db: Db,
  admin: Principal,
  options: { tenantId: string; poolId: string; label: string; allowReclaim?: boolean },
): (poolId?: string) => Promise<string> {
  let made = 0;
  return async (poolId = options.poolId) =>
    (
      await createJoinToken(db, admin, {
        tenantId: options.tenantId,
        poolId,
        ttlSeconds: 3600,
        allowReclaim: options.allowReclaim ?? false,
        idempotencyKey: `${options.label}-${++made}`,
        maxUses: 1,
      })
    ).token!;
}

/** The row id of join token `token` (`bcjt_<id>.<secret>`). */
export const tokenIdOf = (token: string) => token.slice(5).split('.')[0]!;

/** How many joins token `token` has left. */
export async function usesLeftOf(db: Db, token: string): Promise<number | null> {
  return (await db.joinToken.findUniqueOrThrow({ where: { id: tokenIdOf(token) } })).usesLeft;
}
