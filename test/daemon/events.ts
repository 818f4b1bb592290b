import type { Db } from '../../server/db/client';

type EventWhere = NonNullable<NonNullable<Parameters<Db['event']['findMany']>[0]>['where']>;

/** The events `where` selects whose data names node `nodeId`, oldest first. */
export async function eventsOfNode(db: Db, nodeId: string, where: EventWhere) {
  const events = await db.event.findMany({ where, orderBy: { id: 'asc' } });
  return events.filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId);
}
