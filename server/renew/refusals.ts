import type pg from 'pg';
import { REFUSAL_EVENT_LIMIT, REFUSAL_EVENT_WINDOW } from '../join/refusals';

/** The renew-refusal event rate limit; the join's numbers (60 per reason and tenant per minute). */
export interface RenewRefusalLimit {
  limit: number;
  window: string;
  /** Prefix of the rate-limit keys; tests isolate themselves with their own. */
  keyPrefix: string;
}

const DEFAULT_RENEW_REFUSAL_LIMIT: RenewRefusalLimit = {
  limit: REFUSAL_EVENT_LIMIT,
  window: REFUSAL_EVENT_WINDOW,
  keyPrefix: 'renew-refused',
};

/**
 * Publishes one `security.renew.refused` event through the shared rate limit, in its own statement (the
 * renewal's transaction, if any, rolled back). Carries the reason, node and serial, never key material.
 */
export async function recordRenewRefusal(
  pool: pg.Pool,
  tenantId: string,
  data: { reason: string; nodeId: string | null; serial: string | null },
  rate: RenewRefusalLimit = DEFAULT_RENEW_REFUSAL_LIMIT,
): Promise<void> {
  await pool.query('SELECT record_renew_refusal($1, $2, $3::jsonb, $4, $5::interval)', [
    tenantId,
    `${rate.keyPrefix}:${tenantId}:${data.reason}`,
    JSON.stringify(data),
    rate.limit,
    rate.window,
  ]);
}
