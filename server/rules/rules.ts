import type { z } from 'zod';
import { sql } from 'kysely';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { newId } from '../ids';
import { loadSite } from '../sites/sites';
import { firstMatchingRule, matchedOn, ruleMatches, type RuleInForce } from './match';
import { recentRequests, rulesInForce, toRuleInForce } from './dry-run-sql';
import {
  createRuleInput,
  deleteRuleInput,
  dryRunRuleInput,
  listRulesInput,
  moveRuleInput,
  updateRuleInput,
  type DryRunAnswer,
  type RuleRecord,
} from './schemas';

type RuleRow = Awaited<ReturnType<Db['approvalRule']['findFirstOrThrow']>>;

const toRecord = (r: RuleRow): RuleRecord => ({
  id: r.id,
  siteId: r.siteId,
  position: r.position,
  name: r.name,
  match: r.match as Record<string, unknown>,
  action: r.action as RuleRecord['action'],
  poolId: r.poolId,
  maxAdmissions: r.maxAdmissions,
  admissions: r.admissions,
  validUntil: r.validUntil?.toISOString() ?? null,
  enabled: r.enabled,
  createdBy: r.createdBy,
  createdAt: r.createdAt.toISOString(),
  labels: (r.labels ?? {}) as Record<string, string>,
});

/** An approving rule's pool must take the site's discovery joins: a live bcd pool of the same site and owner. */
async function checkRulePool(db: Db, site: { id: string; ownerTenantId: string }, poolId: string | undefined) {
  if (!poolId) return;
  const pool = await db.pool.findUnique({ where: { id: poolId } });
  if (!pool || pool.ownerTenantId !== site.ownerTenantId || pool.siteId !== site.id)
    throw new DomainError('NOT_FOUND', `Pool ${poolId} not found in site ${site.id}`, { field: 'poolId' });
  if (pool.archivedAt || pool.agent !== 'bcd')
    throw new DomainError('INVALID_STATE', `Pool ${poolId} is archived or runs no daemon: no machine can join it`, { field: 'poolId' });
}

/** Takes the site's row lock: the order of its rules changes under it. */
async function lockSite(tx: Tx, siteId: string) {
  await typed(tx).selectFrom('sites').select('id').where('id', '=', siteId).forUpdate().execute();
}

/**
 * `approvalRules.create` (`compute:sites:manage` on the site): appends a rule to the site's ordered list.
 * From the next discovery join on, the first rule in force that matches decides it in the join's own
 * transaction (approve into its pool, reject, or leave it for a person).
 */
export async function createRule(db: Db, principal: Principal, input: z.infer<typeof createRuleInput>): Promise<RuleRecord> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  await checkRulePool(db, site, input.poolId);
  return db.$transaction(async (tx) => {
    // The site's rules are ordered by position; a row lock on the site serializes two appends.
    await lockSite(tx, site.id);
    const last = await tx.approvalRule.findFirst({ where: { siteId: site.id }, orderBy: { position: 'desc' } });
    const row = await tx.approvalRule.create({
      data: {
        id: newId('rule'),
        tenantId: site.ownerTenantId,
        siteId: site.id,
        position: (last?.position ?? 0) + 1,
        name: input.name,
        match: input.match,
        action: input.action,
        poolId: input.poolId ?? null,
        maxAdmissions: input.maxAdmissions ?? null,
        validUntil: input.validUntil ? new Date(input.validUntil) : null,
        enabled: input.enabled ?? true,
        createdBy: principal.actor,
        labels: input.labels ?? {},
      },
    });
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'approval-rule.created',
      resource: `compute-approval-rule/${row.id}`,
      data: { siteId: site.id, name: row.name, action: row.action, poolId: row.poolId, labels: row.labels },
    });
    return toRecord(row);
  });
}

/** `approvalRules.list` (`compute:sites:read`): the site's rules in the order they decide. */
export async function listRules(db: Db, principal: Principal, input: z.infer<typeof listRulesInput>) {
  const site = await loadSite(db, principal, 'compute:sites:read', input);
  const rows = await db.approvalRule.findMany({ where: { siteId: site.id }, orderBy: [{ position: 'asc' }, { id: 'asc' }] });
  return { items: rows.map(toRecord) };
}

/**
 * `approvalRules.update` (`compute:sites:manage`): replaces the rule's name, conditions, action, pool and
 * limits (and `enabled` when given); its place and its admission count stay. Decides from the next join on.
 */
export async function updateRule(db: Db, principal: Principal, input: z.infer<typeof updateRuleInput>): Promise<RuleRecord> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  await checkRulePool(db, site, input.poolId);
  return db.$transaction(async (tx) => {
    const found = await tx.approvalRule.findFirst({ where: { id: input.ruleId, siteId: site.id } });
    if (!found) throw new DomainError('NOT_FOUND', `Rule ${input.ruleId} not found`);
    const row = await tx.approvalRule.update({
      where: { id: found.id },
      data: {
        name: input.name,
        match: input.match,
        action: input.action,
        poolId: input.poolId ?? null,
        maxAdmissions: input.maxAdmissions ?? null,
        validUntil: input.validUntil ? new Date(input.validUntil) : null,
        ...(input.enabled === undefined ? {} : { enabled: input.enabled }),
        // A rule that stops approving gives no labels; otherwise absent labels stay as they are.
        ...(input.action !== 'approve' ? { labels: {} } : input.labels === undefined ? {} : { labels: input.labels }),
      },
    });
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'approval-rule.updated',
      resource: `compute-approval-rule/${row.id}`,
      data: { siteId: site.id, name: row.name, action: row.action, poolId: row.poolId, enabled: row.enabled, labels: row.labels },
    });
    return toRecord(row);
  });
}

/**
 * `approvalRules.move` (`compute:sites:manage`): puts the rule at `position` (1-based; past the end means
 * last) and renumbers the site's rules 1..n, under the site's row lock so two moves never interleave.
 */
export async function moveRule(db: Db, principal: Principal, input: z.infer<typeof moveRuleInput>): Promise<RuleRecord[]> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  return db.$transaction(async (tx) => {
    await lockSite(tx, site.id);
    const rows = await tx.approvalRule.findMany({ where: { siteId: site.id }, orderBy: [{ position: 'asc' }, { id: 'asc' }] });
    const moving = rows.find((r) => r.id === input.ruleId);
    if (!moving) throw new DomainError('NOT_FOUND', `Rule ${input.ruleId} not found`);
    const order = rows.filter((r) => r !== moving);
    order.splice(Math.min(input.position, rows.length) - 1, 0, moving);
    const ids = order.map((r) => r.id);
    await typed(tx)
      .updateTable('approval_rules as r')
      .from(sql<{ id: string; position: number }>`unnest(${ids}::text[]) WITH ORDINALITY`.as<'x'>(sql`x(id, position)`))
      .set((eb) => ({ position: eb.ref('x.position') }))
      .whereRef('r.id', '=', 'x.id')
      .where((eb) => eb('r.position', 'is distinct from', eb.cast<number>(eb.ref('x.position'), 'integer')))
      .execute();
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'approval-rule.moved',
      resource: `compute-approval-rule/${moving.id}`,
      data: { siteId: site.id, name: moving.name, position: order.indexOf(moving) + 1 },
    });
    return order.map((r, i) => toRecord({ ...r, position: i + 1 }));
  });
}

/** `approvalRules.delete` (`compute:sites:manage`): the rule stops deciding at once. Deleting twice is NOT_FOUND. */
export async function deleteRule(db: Db, principal: Principal, input: z.infer<typeof deleteRuleInput>): Promise<RuleRecord> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  return db.$transaction(async (tx) => {
    const row = await tx.approvalRule.findFirst({ where: { id: input.ruleId, siteId: site.id } });
    if (!row) throw new DomainError('NOT_FOUND', `Rule ${input.ruleId} not found`);
    await tx.approvalRule.delete({ where: { id: row.id } });
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'approval-rule.deleted',
      resource: `compute-approval-rule/${row.id}`,
      data: { siteId: site.id, name: row.name },
    });
    return toRecord(row);
  });
}

/**
 * `approvalRules.dryRun`: what the draft would do, before it is saved, with the site's live pending requests
 * and every request of the last 7 days (oldest first, so a `maxAdmissions` is spent in arrival order): the
 * requests it would decide, and those an earlier rule of the site would take first. Decided exactly as the
 * join decides: on the vouched MAC, IP and voucher, and the claims.
 */
export async function dryRunRule(db: Db, principal: Principal, input: z.infer<typeof dryRunRuleInput>): Promise<DryRunAnswer> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  await checkRulePool(db, site, input.poolId);
  const [rules, requests] = await Promise.all([rulesInForce(db, site.id), recentRequests(db, site.ownerTenantId, site.id)]);
  // An edit keeps the rule's place: only the rules before it decide first. A new rule goes last.
  const editing = input.ruleId ? await db.approvalRule.findFirst({ where: { id: input.ruleId, siteId: site.id } }) : null;
  if (input.ruleId && !editing) throw new DomainError('NOT_FOUND', `Rule ${input.ruleId} not found`);
  const earlier = rules
    .filter((r) => !editing || r.position < editing.position || (r.position === editing.position && r.id < editing.id))
    .map(toRuleInForce);
  const draft: RuleInForce = {
    id: 'draft',
    name: input.name,
    action: input.action,
    match: input.match,
    maxAdmissions: input.maxAdmissions ?? null,
    admissions: 0,
    validUntil: null,
  };
  let admitted = 0;
  const items: DryRunAnswer['items'] = [];
  for (const r of requests) {
    const facts = { attestor: r.attestor, vouchedMac: r.mac, vouchedIp: r.ip, vouchedBy: r.vouched_by, claims: r.claims ?? {} };
    if (!ruleMatches(draft.match, facts)) continue;
    const first = firstMatchingRule(earlier, facts, null, new Map());
    if (!first && draft.action === 'approve' && draft.maxAdmissions !== null && admitted >= draft.maxAdmissions) continue;
    if (!first && draft.action === 'approve') admitted++;
    const hostname = typeof r.claims?.hostname === 'string' ? r.claims.hostname : null;
    items.push({
      requestId: r.id,
      state: r.state,
      createdAt: r.created_at.toISOString(),
      action: draft.action,
      decidedEarlierBy: first?.id ?? null,
      mac: r.mac,
      hostname,
    });
  }
  return { considered: requests.length, items, matchedOn: matchedOn(input.match) };
}
