import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { Prisma } from '../db/generated/client';
import { listStatement } from './list';

describe('joinRequests.list at scale', () => {
  it('reads the first page of 5,000 pending requests from indexes, never a scan of join_requests', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    await db.$executeRaw`
      INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, csr_sha256, expires_at, created_at)
      SELECT 'jreq_plan' || g || ${t.siteId}, ${t.tenantId}, ${t.siteId}, 'discovery', 'pending', 'plan:' || g || ${t.siteId}, 'x',
             now() + interval '1 day', now() - g * interval '1 millisecond'
        FROM generate_series(1, 5000) AS g`;
    await db.$executeRaw`ANALYZE join_requests`;
    const pool = { id: t.poolId, siteId: t.siteId, ownerTenantId: t.tenantId };
    const plan = (await db.$queryRaw<{ 'QUERY PLAN': string }[]>`EXPLAIN ${listStatement(pool, 'pending', Prisma.empty, 101)}`)
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).not.toMatch(/Seq Scan on join_requests/);
    expect(plan).toMatch(/Index (Only )?Scan/);
  });
});
