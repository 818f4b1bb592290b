import type { NodeSessionState } from '../../protocol/api/node-schemas';
import { sql } from 'kysely';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';

interface NodeTimes {
  id: string;
  connectedSince: Date | null;
  sessionEndedAt: Date | null;
}

/** The session state of each of `nodes`, in one query for their live sessions. */
export async function sessionStates(db: Db | Tx, nodes: readonly NodeTimes[]): Promise<Map<string, NodeSessionState>> {
  const ids = nodes.map((n) => n.id);
  const live = ids.length
    ? await typed(db)
        .selectFrom('node_sessions as s')
        .innerJoin('gateway_leases as g', 'g.gateway_id', 's.gateway_id')
        .distinctOn('s.node_id')
        .select(['s.node_id', 's.gateway_id', 'g.heartbeat_at'])
        .where((eb) => eb('s.node_id', '=', eb.fn.any(eb.val(ids))))
        .where('g.expires_at', '>', sql<Date>`compute_now()`)
        .orderBy('s.node_id')
        .orderBy('s.opened_at', 'desc')
        .execute()
    : [];
  const byNode = new Map(live.map((row) => [row.node_id, row]));
  return new Map(
    nodes.map((node) => {
      const session = byNode.get(node.id);
      const ended = node.sessionEndedAt?.toISOString() ?? null;
      return [
        node.id,
        session
          ? {
              connected: true,
              since: (node.connectedSince ?? session.heartbeat_at).toISOString(),
              lastHeartbeat: session.heartbeat_at.toISOString(),
              gatewayId: session.gateway_id,
            }
          : { connected: false, since: ended, lastHeartbeat: ended, gatewayId: null },
      ];
    }),
  );
}
