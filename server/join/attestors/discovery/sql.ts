/** A row of {@link SELECT_KNOWN_MACHINES}: a known node for join `i`. */
export interface KnownMachineRow {
  i: number;
  node_id: string;
}

// Read under the site queues' lock the core takes (LOCK_SITE_QUEUES, ../../request-admission-sql.ts).

/**
 * Which of the batch's machines are known (protocol.md "Discovery joins"), read under LOCK_SITE_QUEUES: the token's bound MAC (12 hex
 * digits), which the boot step vouched for, is a permanent MAC of a node of the token's site. Claims alone
 * never make a machine known. The matched node (one whose trusted hardware key is also the join's first, so
 * the event names the most likely machine) is an index lookup (the `nodes_macs` GIN index); `i` is the
 * join's index in the batch.
 */
export const SELECT_KNOWN_MACHINES = `
SELECT k.i, m.id AS node_id
  FROM unnest($1::int[], $2::text[], $3::text[], $4::bytea[]) AS k(i, site, mac, hk)
  CROSS JOIN LATERAL (
    SELECT n.id FROM nodes n
     WHERE compute_node_macs(n.claims) @> ARRAY[k.mac] AND n.site_id = k.site
     ORDER BY (k.hk IS NOT NULL AND n.hardware_key_trusted AND n.hardware_key = k.hk) DESC, n.id
     LIMIT 1
  ) m`;
