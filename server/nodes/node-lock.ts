import type { Tx } from '../db/client';
import { typed } from '../db/typed';

/**
 * Takes the node's row lock in `tx` (`SELECT … FOR UPDATE`), the lock a renewal and a join's reclaim take too, so
 * a lifecycle change, a label edit and an admission touching the node are ordered.
 */
export async function lockNode(tx: Tx, nodeId: string): Promise<void> {
  await typed(tx).selectFrom('nodes').select('id').where('id', '=', nodeId).forUpdate().execute();
}
