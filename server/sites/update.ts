import { z } from 'zod';
import { sql } from 'kysely';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import type { Prisma } from '../db/generated/client';
import { DomainError } from '../../protocol/errors';
import { resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { updatedSiteSettings } from '../join/attestors';
import { loadSite, toSiteRecord } from './sites';
import type { SiteRecord, updateSiteInput } from '../../protocol/api/site-schemas';

/**
 * `sites.update` (`compute:sites:manage`): changes a live site's discovery settings (`approval`:
 * `unknown-machines` admits machines the site knows at once, `always` holds every PXE machine for an
 * operator; `pendingTtlSeconds`: how long a request waits; `maxPendingRequests`: how many may wait at once)
 * and `requiredApprovals` (2: two-person approval of its join requests). Later joins and decisions read the
 * new settings; a first approval already recorded stays recorded. `tpm`: whether an unlisted TPM waits in the
 * queue (`enrollment`), how long, and the EK hashes admitted without an operator (`addEkHashes`, `removeEkHashes`).
 * `siteAgentTokenCap`: how many live discovery tokens the site may hold before its site agents' mints are refused.
 * Lowering `requiredApprovals` from 2 to 1 is INVALID_STATE while any request of the site waits (pending, with
 * or without a first approval): one person cannot lower the rule to push a waiting machine through alone.
 */
export async function updateSite(db: Db, principal: Principal, input: z.infer<typeof updateSiteInput>): Promise<SiteRecord> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  if (site.archivedAt) throw new DomainError('INVALID_STATE', `Site ${site.id} is archived`, { field: 'siteId' });
  // Each attestor checks and stores its own settings (`discovery`, `tpm`); a refused change throws before any write.
  const settings = updatedSiteSettings(site, input);
  return db.$transaction(async (tx) => {
    const requiredApprovals = input.requiredApprovals ?? (site.requiredApprovals >= 2 ? 2 : 1);
    if (requiredApprovals < 2) await assertNothingWaitsForTwo(tx, site.id);
    const siteAgentTokenCap = input.siteAgentTokenCap ?? site.siteAgentTokenCap;
    const data = { ...(settings.stored as Pick<Prisma.SiteUpdateInput, 'discovery' | 'tpm'>), requiredApprovals, siteAgentTokenCap };
    const updated = await tx.site.update({ where: { id: site.id }, data });
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'site.updated',
      resource: resource.site(site.id),
      data: { ...settings.audit, requiredApprovals, siteAgentTokenCap },
    });
    return toSiteRecord(updated);
  });
}

/**
 * Refuses (INVALID_STATE) going down to one approval while the site has live pending requests that asked under
 * two-person approval. The site's row is locked first, so an approval deciding under the old setting and this
 * change take turns.
 */
async function assertNothingWaitsForTwo(tx: Tx, siteId: string): Promise<void> {
  const site = await typed(tx).selectFrom('sites').select('required_approvals').where('id', '=', siteId).forUpdate().executeTakeFirst();
  if (!site || site.required_approvals < 2) return;
  const waiting = await typed(tx)
    .selectFrom('join_requests')
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
    .where('site_id', '=', siteId)
    .where('state', '=', 'pending')
    .where('expires_at', '>', sql<Date>`compute_now()`)
    .executeTakeFirst();
  const n = waiting?.n ?? 0;
  if (n > 0) {
    throw new DomainError(
      'INVALID_STATE',
      `Site ${siteId} has ${n} join request${n === 1 ? '' : 's'} waiting for two approvals: approve (by two people) or reject ${n === 1 ? 'it' : 'them'}, or let ${n === 1 ? 'it' : 'them'} expire, before lowering requiredApprovals to 1`,
      { field: 'requiredApprovals' },
    );
  }
}
