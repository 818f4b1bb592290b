import type pg from 'pg';
import { REFUSAL_EVENT_LIMIT, REFUSAL_EVENT_WINDOW } from '../join/refusals';

/** The session-refusal event rate limit; the join's numbers (60 per reason and tenant per minute). */
export interface SessionRefusalLimit {
  limit: number;
  window: string;
  /** Prefix of the rate-limit keys; tests isolate themselves with their own. */
  keyPrefix: string;
}

const DEFAULT_SESSION_REFUSAL_LIMIT: SessionRefusalLimit = {
  limit: REFUSAL_EVENT_LIMIT,
  window: REFUSAL_EVENT_WINDOW,
  keyPrefix: 'session-refused',
};

/** Publishes one `security.session.refused` event (reason, node, serial; never key material) through the shared limit. */
export async function recordSessionRefusal(
  pool: pg.Pool,
  tenantId: string,
  data: { reason: string; nodeId: string | null; serial: string | null },
  rate: SessionRefusalLimit = DEFAULT_SESSION_REFUSAL_LIMIT,
): Promise<void> {
  await pool.query('SELECT record_session_refusal($1, $2, $3::jsonb, $4, $5::interval)', [
    tenantId,
    `${rate.keyPrefix}:${tenantId}:${data.reason}`,
    JSON.stringify(data),
    rate.limit,
    rate.window,
  ]);
}
