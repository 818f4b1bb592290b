import { sql } from 'kysely';
import type { Tx } from '../db/client';
import { typed } from '../db/typed';

/**
 * The site agent's statements (server/sites/site-agent-service.ts). A mint runs in one transaction after the
 * site's row lock (FOR NO KEY UPDATE: joins inserting nodes of the site take only a key share and do not wait),
 * so the cap's count and the one-reference-per-MAC rule are exact across API instances. The mint's statements
 * go through the typed layer in that transaction; the redeem and the refusal record run on the hot paths' pg pool.
 */

const computeNow = sql<Date>`compute_now()`;

/** Locks the site's row: its owner, whether it is archived and its cap of live discovery tokens. */
export function lockSite(tx: Tx, siteId: string) {
  return typed(tx)
    .selectFrom('sites')
    .select((eb) => ['owner_tenant_id', eb('archived_at', 'is not', null).as('is_archived'), 'site_agent_token_cap as cap'])
    .where('id', '=', siteId)
    .forNoKeyUpdate()
    .executeTakeFirst();
}

/** The site's live reference for a MAC (at most one: secret_refs_live_mac_key), with its token's standing. */
export function liveRef(tx: Tx, siteId: string, mac: string) {
  return typed(tx)
    .selectFrom('secret_refs as r')
    .innerJoin('join_tokens as t', 't.id', 'r.token_id')
    .select((eb) => [
      'r.id',
      'r.node_id',
      eb.cast<string>('r.boot_lease_epoch', 'text').as('epoch'),
      'r.token_id',
      'r.expires_at',
      eb
        .and([eb('t.revoked_at', 'is', null), eb('t.uses_left', '>', 0), eb('t.expires_at', '>', computeNow)])
        .$castTo<boolean>()
        .as('token_live'),
    ])
    .where('r.site_id', '=', siteId)
    .where('r.mac', '=', mac)
    .where('r.superseded_at', 'is', null)
    .executeTakeFirst();
}

/**
 * A newer lease's epoch supersedes the reference and revokes its token unless a machine already joined with it.
 * Answers the revoked tokens' ids.
 */
export function supersedeRef(tx: Tx, refId: string, actor: string) {
  return typed(tx)
    .with('r', (db) =>
      db.updateTable('secret_refs').set({ superseded_at: computeNow, sealed: null }).where('id', '=', refId).returning('token_id'),
    )
    .updateTable('join_tokens as t')
    .set({ revoked_at: computeNow, revoked_by: actor })
    .from('r')
    .whereRef('t.id', '=', 'r.token_id')
    .where('t.revoked_at', 'is', null)
    .where('t.uses_left', '>', 0)
    .returning('t.id')
    .execute();
}

/**
 * Serialises mints of one MAC across every site of the tenant (the site's row lock covers only its own site, and
 * secret_refs_live_mac_key is per site): taken after the site's lock, so two sites minting the same MAC at once
 * decide one after the other, and the second sees the first's reference (each statement of a READ COMMITTED
 * transaction reads what committed before it).
 */
export async function lockTenantMac(tx: Tx, tenantId: string, mac: string): Promise<void> {
  const key = sql<string>`'site-agent-mac:' || ${tenantId}::text || ':' || ${mac}::text`;
  await typed(tx)
    .selectFrom(sql`pg_advisory_xact_lock(hashtextextended(${key}, 0))`.as('l'))
    .select(sql<number>`1`.as('locked'))
    .execute();
}

/**
 * Whether the MAC is another site's of the same tenant: a node there that is not retired and belongs to that
 * tenant, or a live reference of one of that tenant's other sites. Scoped to the tenant as joining.md scopes a
 * machine's identity (a reclaim and a provisioned join match a machine only within its tenant): the MACs are the
 * machines' own claims, so another tenant's machines, or a hosted pool's machines in a site of ours, must neither
 * block our mints nor tell our site agent, through a refusal, what they claim. `mac` normalised (`3c:ec:…`).
 */
export async function macElsewhere(tx: Tx, siteId: string, mac: string, tenantId: string): Promise<boolean> {
  const bareMac = mac.replace(/:/g, ''); // the 12 hex digits compute_node_macs answers
  const { elsewhere } = await typed(tx)
    .selectNoFrom((eb) =>
      eb
        .or([
          eb.exists(
            eb
              .selectFrom('nodes as n')
              .innerJoin('sites as s', 's.id', 'n.site_id')
              .select(eb.lit(1).as('one'))
              .where((w) => sql<boolean>`compute_node_macs(${w.ref('n.claims')}) @> ARRAY[${bareMac}::text]`)
              .where('n.site_id', '<>', siteId)
              .where('n.state', '<>', 'retired')
              .where('n.tenant_id', '=', tenantId)
              .where('s.owner_tenant_id', '=', tenantId),
          ),
          eb.exists(
            eb
              .selectFrom('secret_refs as r')
              .innerJoin('sites as s', 's.id', 'r.site_id')
              .select(eb.lit(1).as('one'))
              .where('r.mac', '=', mac)
              .where('r.site_id', '<>', siteId)
              .where('r.superseded_at', 'is', null)
              .where('r.expires_at', '>', computeNow)
              .where('s.owner_tenant_id', '=', tenantId),
          ),
        ])
        .$castTo<boolean>()
        .as('elsewhere'),
    )
    .executeTakeFirstOrThrow();
  return elsewhere;
}

/** The site's live discovery tokens (not revoked, not spent, not expired), whoever minted them. */
export async function countLiveDiscovery(tx: Tx, siteId: string): Promise<number> {
  const { live } = await typed(tx)
    .selectFrom('join_tokens')
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('live'))
    .where('site_id', '=', siteId)
    .where('role', '=', 'discovery')
    .where('revoked_at', 'is', null)
    .where('uses_left', '>', 0)
    .where('expires_at', '>', computeNow)
    .executeTakeFirstOrThrow();
  return live;
}

/** A minted reference: its sealed token, for the agent that minted it, until it expires. */
export async function insertRef(
  tx: Tx,
  ref: {
    id: string;
    tokenId: string;
    siteId: string;
    nodeId: string;
    mac: string;
    bootLeaseEpoch: string;
    sealed: Buffer;
    expiresAt: string;
  },
): Promise<void> {
  await typed(tx)
    .insertInto('secret_refs')
    .values({
      id: ref.id,
      token_id: ref.tokenId,
      site_id: ref.siteId,
      node_id: ref.nodeId,
      mac: ref.mac,
      boot_lease_epoch: sql<string>`${ref.bootLeaseEpoch}::bigint`,
      sealed: ref.sealed,
      expires_at: sql<Date>`${ref.expiresAt}::timestamptz`,
    })
    .execute();
}

/**
 * Redeems a reference once: only the agent that minted it, before it expired or was superseded, while its
 * token is not revoked. The row lock makes a concurrent second redeem wait and then find it redeemed.
 */
export const REDEEM_REF = `
WITH old AS (
  SELECT r.id, r.token_id, r.sealed FROM secret_refs r JOIN join_tokens t ON t.id = r.token_id
   WHERE r.id = $1 AND r.node_id = $2 AND r.redeemed_at IS NULL AND r.superseded_at IS NULL
     AND r.expires_at > compute_now() AND t.revoked_at IS NULL
   FOR UPDATE OF r
)
UPDATE secret_refs r SET redeemed_at = compute_now(), sealed = NULL FROM old WHERE r.id = old.id
RETURNING old.token_id, old.sealed`;

export const RECORD_REFUSAL = 'SELECT record_site_agent_refusal($1, $2, $3::jsonb, $4, $5::interval)';
