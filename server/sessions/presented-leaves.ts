import { createHash } from 'node:crypto';
import type pg from 'pg';
import { SELECT_PRESENTED_LEAVES } from '../renew/renew-sql';
import type { LeafRow } from '../renew/renew-write';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

/**
 * The `node_certs` rows of the presented leaves, in their order (null where a leaf is no row), in one
 * statement: the Hellos of a group share its round trip and its planning (a named statement, parsed once per
 * connection).
 */
export async function readPresentedLeaves(pool: pg.Pool, leaves: Buffer[]): Promise<Array<LeafRow | null>> {
  const found = await pool.query<LeafRow>({
    name: 'session-presented-leaves',
    text: SELECT_PRESENTED_LEAVES,
    values: [leaves.map(sha256), leaves],
  });
  const byOrd = new Map(found.rows.map((row) => [row.ord, row]));
  return leaves.map((_, i) => byOrd.get(i + 1) ?? null);
}
