import type pg from 'pg';
import { recordSuppressedRefusals, type ApiMetrics } from '../metrics/api-metrics';

/** Refusal events are rate-limited to this many per attestor and reason per window. */
export const REFUSAL_EVENT_LIMIT = 60;
export const REFUSAL_EVENT_WINDOW = '60 seconds';

export interface RefusalRecord {
  attestor: string;
  reason: string;
  role: string;
  csrSha256: string | null;
  hardwareKey: string | null;
  /** The token's tenant once its secret verified; null sends the event to the root tenant. */
  tenantId: string | null;
  /** The token's id, only once its secret verified. */
  tokenId?: string | null;
  /** For `join:expect`: the binding the machine did not satisfy (its name, never a value). */
  expectField?: string | null;
  /** Where the join came from (joinCallerAddress): the caller's address, or what the gateway vouched for. */
  clientAddress?: string;
}

/** The refusal-event rate limit: `limit` events per key and `window`. */
export interface RefusalLimit {
  limit: number;
  window: string;
  /** Prefix of the rate-limit keys; tests isolate themselves with their own. */
  keyPrefix: string;
}

const DEFAULT_REFUSAL_LIMIT: RefusalLimit = { limit: REFUSAL_EVENT_LIMIT, window: REFUSAL_EVENT_WINDOW, keyPrefix: 'join-refused' };

/**
 * The rate-limit key of a refusal: per attestor and reason, and per event stream (tenant), so refusals
 * in one tenant's stream never suppress, nor show up in the `suppressed` count of, another tenant's.
 */
export function refusalLimitKey(keyPrefix: string, tenantId: string, attestor: string, reason: string): string {
  return `${keyPrefix}:${tenantId}:${attestor}:${reason}`;
}

/**
 * Writes `security.join.refused` events in their own transaction, outside the join's (which rolled back
 * or never took a lock), through the database's shared rate limit. `reason` is `<attestor>:<reason>` as
 * the spec lists it. Events carry hashes only, never a token or a secret.
 *
 * @throws when the events cannot be written; the caller logs it (the refusal stands).
 */
export async function recordRefusals(
  pool: pg.Pool,
  refusals: RefusalRecord[],
  rootTenantId: string | null,
  rate: RefusalLimit = DEFAULT_REFUSAL_LIMIT,
  metrics?: ApiMetrics,
): Promise<void> {
  const routed = refusals.flatMap((r) => {
    const tenantId = r.tenantId ?? rootTenantId;
    return tenantId ? [{ ...r, tenantId }] : [];
  });
  if (!routed.length) return;
  const result = await pool.query<{ written: number }>(
    'SELECT record_join_refusals($1::text[], $2::text[], $3::jsonb[], $4, $5::interval) AS written',
    [
      routed.map((r) => r.tenantId),
      routed.map((r) => refusalLimitKey(rate.keyPrefix, r.tenantId, r.attestor, r.reason)),
      routed.map((r) =>
        JSON.stringify({
          attestor: r.attestor,
          reason: r.reason,
          role: r.role,
          csrSha256: r.csrSha256,
          hardwareKey: r.hardwareKey,
          ...(r.tokenId ? { tokenId: r.tokenId } : {}),
          ...(r.expectField ? { expectField: r.expectField } : {}),
          ...(r.clientAddress ? { clientAddress: r.clientAddress } : {}),
        }),
      ),
      rate.limit,
      rate.window,
    ],
  );
  if (metrics) recordSuppressedRefusals(metrics, routed, Number(result.rows[0]?.written ?? routed.length));
}
