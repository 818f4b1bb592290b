import { sql, type ExpressionBuilder } from 'kysely';
import type { Tx } from '../db/client';
import type { DB } from '../db/generated/kysely/types';
import { typed } from '../db/typed';
import type { RuleInForce, RuleMatch } from './match';

// What a dry run reads (rules.ts dryRunRule): the site's rules in force and its recent join requests.

/** How far back a dry run looks besides the live pending requests. */
const DRY_RUN_DAYS = 7;

/** A join request's state as a site's views read it: a pending one past its expiry (database clock) is `expired`. */
export function pendingStateAsRead(eb: ExpressionBuilder<DB, 'join_requests'>) {
  return eb
    .case()
    .when(eb.and([eb('state', '=', 'pending'), eb('expires_at', '<=', sql<Date>`compute_now()`)]))
    .then(sql.lit('expired'))
    .else(eb.ref('state'))
    .end();
}

/** The site's enabled rules that have not ended (by the database clock), in the order they decide. */
export function rulesInForce(db: Tx, siteId: string) {
  return typed(db)
    .selectFrom('approval_rules')
    .select([
      'id',
      'position',
      'name',
      'match',
      'action',
      'max_admissions as maxAdmissions',
      'admissions',
      'valid_until as validUntil',
      'enabled',
    ])
    .where('site_id', '=', siteId)
    .where('enabled', '=', true)
    .where((eb) => eb.or([eb('valid_until', 'is', null), eb('valid_until', '>', sql<Date>`compute_now()`)]))
    .orderBy('position')
    .orderBy('id')
    .execute();
}

/**
 * The site's live pending requests and every request of the last 7 days, oldest first (so a `maxAdmissions` is
 * spent in arrival order), with the state they read as (a pending one past its expiry is `expired`).
 */
export function recentRequests(db: Tx, tenantId: string, siteId: string) {
  return typed(db)
    .selectFrom('join_requests')
    .select((eb) => ['id', pendingStateAsRead(eb).as('state'), 'attestor', 'mac', 'ip', 'vouched_by', 'claims', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('site_id', '=', siteId)
    .where((eb) =>
      eb.or([
        eb.and([eb('state', '=', 'pending'), eb('expires_at', '>', sql<Date>`compute_now()`)]),
        eb('created_at', '>', sql<Date>`compute_now() - ${DRY_RUN_DAYS}::int * interval '1 day'`),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .$narrowType<{ claims: Record<string, unknown> }>()
    .execute();
}

/** A rule as the join's decision reads it. */
export const toRuleInForce = (r: Awaited<ReturnType<typeof rulesInForce>>[number]): RuleInForce => ({
  id: r.id,
  name: r.name,
  action: r.action as RuleInForce['action'],
  match: r.match as RuleMatch,
  maxAdmissions: r.maxAdmissions,
  admissions: r.admissions,
  validUntil: r.validUntil,
  enabled: r.enabled,
});
