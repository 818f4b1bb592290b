import type { NodeSessionState } from '../../protocol/api/node-schemas';
import type { Db, Tx } from '../db/client';

interface NodeTimes {
  id: string;
  connectedSince: Date | null;
  sessionEndedAt: Date | null;
}

/** The session state of each of `nodes`, in one query for their live sessions. */
export async function sessionStates(db: Db | Tx, nodes: readonly NodeTimes[]): Promise<Map<string, NodeSessionState>> {
  const ids = nodes.map((n) => n.id);
  const live = ids.length
    ? await db.$queryRaw<Array<{ node_id: string; gateway_id: string; heartbeat_at: Date }>>`
        SELECT DISTINCT ON (s.node_id) s.node_id, s.gateway_id, g.heartbeat_at
          FROM node_sessions s JOIN gateway_leases g ON g.gateway_id = s.gateway_id
         WHERE s.node_id = ANY(${ids}) AND g.expires_at > compute_now()
         ORDER BY s.node_id, s.opened_at DESC`
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
