import { Prisma } from '../db/generated/client';

/** How far up a chain of keys minting keys the person is looked for; a deeper chain ends at its 16th key. */
const MAX_KEY_CHAIN = 16;

/**
 * Every identity of the person behind `actor`, as a subquery of actors: a key acts as the person who created
 * it (`api_keys.created_by`, followed up through keys that minted keys), and that person's session and every
 * key minted under them, at any depth, are one person. Two-person approval compares people with this, so an
 * admin's own keys never supply the second approval. An actor that is no key (an operator, `local:…`) is its
 * own person.
 */
export function samePersonActors(actor: string): Prisma.Sql {
  return Prisma.sql`(
    WITH RECURSIVE up(actor, depth) AS (
      SELECT ${actor}::text, 0
      UNION ALL
      SELECT k.created_by, up.depth + 1 FROM api_keys k JOIN up ON up.actor LIKE 'api-key:%' AND k.id = substr(up.actor, 9)
       WHERE up.depth < ${MAX_KEY_CHAIN}
    ), person AS (
      SELECT actor FROM up ORDER BY depth DESC LIMIT 1
    ), down(actor) AS (
      SELECT actor FROM person
      UNION
      SELECT 'api-key:' || k.id FROM api_keys k JOIN down ON k.created_by = down.actor
    )
    SELECT actor FROM down)`;
}
