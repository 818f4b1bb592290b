import type pg from 'pg';
import { MAX_TRUST_SESSIONS_PER_LEASE, type LeaseAnswer } from '../../protocol/session-wire';
import { signTrusted, trustSetBody, type TrustState } from '../pki/rotation/trust-state';
import { DELIVER_TRUST } from './session-sql';

/** The `trust` event's data for `nodeId`: the trust set (protocol.md "Trust rotation") in a signed envelope. */
export function signedTrustSet(trust: TrustState, nodeId: string) {
  return signTrusted(trust, trustSetBody(trust, nodeId));
}

/**
 * The trust sets a gateway's lease answer carries: for at most `limit` ({@link MAX_TRUST_SESSIONS_PER_LEASE})
 * sessions at `gatewayId` whose agent holds an older version than `trust`, marked sent in the same statement,
 * one envelope per node (signed once, whatever its number of sessions). `more` says that the limit was
 * reached: the gateway calls again at once.
 */
export async function deliverTrust(
  pool: pg.Pool,
  gatewayId: string,
  trust: TrustState,
  limit = MAX_TRUST_SESSIONS_PER_LEASE,
): Promise<Required<Pick<LeaseAnswer, 'trust' | 'more'>>> {
  const due = await pool.query<{ session_id: string; node_id: string }>({
    name: 'session-trust-due',
    text: DELIVER_TRUST,
    values: [gatewayId, trust.version, limit],
  });
  const envelopes = new Map<string, ReturnType<typeof signedTrustSet>>();
  const events = due.rows.map((row) => {
    let event = envelopes.get(row.node_id);
    if (!event) envelopes.set(row.node_id, (event = signedTrustSet(trust, row.node_id)));
    return { sessionId: row.session_id, event };
  });
  return { trust: events, more: events.length >= limit };
}

/**
 * Calls `listener` whenever `source` (the PKI source: `PkiSource.onChange`) swaps in a runtime of another trust
 * set. A source without change notifications (a fixed test runtime) is followed by nobody.
 */
export function followTrustChanges(source: object, listener: () => void): void {
  const onChange = (source as { onChange?: unknown }).onChange;
  if (typeof onChange === 'function')
    (onChange as (this: object, listener: (runtime: unknown) => void) => unknown).call(source, () => listener());
}
