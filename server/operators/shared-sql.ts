import { sql } from 'kysely';
import type { Tx } from '../db/client';
import { typed } from '../db/typed';

// Statements the operator, invitation and API key paths share, in the typed layer (docs/decisions/typed-sql.md).

/** The database's clock (`compute_now()`: `now()`, or the test clock), the one authority for expiry. */
export const computeNow = sql<Date>`compute_now()`;

/**
 * Locks the tenant's row for the transaction: the "first admin" checks (no member, key or invitation yet) of
 * concurrent invitations and keys are decided one after the other.
 */
export async function lockTenant(tx: Tx, tenantId: string): Promise<void> {
  await typed(tx).selectFrom('tenants').select('id').where('id', '=', tenantId).forUpdate().execute();
}
