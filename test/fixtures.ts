import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Db } from '../server/db/client';
import { toDomainError } from '../server/api/trpc';
import type { Role } from '../protocol/api/permissions';
import { projectResource, resource } from '../server/authz/authorize';
import { principalOf, type Principal } from '../server/authz/principal';
import { newId } from '../server/ids';
import { createPool } from '../server/pools/pools';
import type { PoolRecord } from '../protocol/api/pool-schemas';
import { createSite } from '../server/sites/sites';
import type { SiteRecord } from '../protocol/api/site-schemas';
import { hashTokenSecret, parseJoinToken } from '../server/tokens/secret';

export interface TestTenant {
  tenantId: string;
  name: string;
  admin: Principal;
  operator: Principal;
  viewer: Principal;
  site: SiteRecord;
  pool: PoolRecord;
  /** `site.id` and `pool.id`, for tests that pass ids around. */
  siteId: string;
  poolId: string;
  /** A new caller of the tenant with `role`. */
  as(role: Role): Principal;
  /** Another pool in the same site; returns its id. */
  newPool(agent?: 'bcd' | 'none'): Promise<string>;
}

/**
 * A tenant of its own for one test: a custom site with a `bcd` pool, made through the domain functions, and
 * principals for each role. Names are random (`label` only prefixes them) so test files can share the
 * database and run in parallel. The tenant row is inserted directly, so no root tenant or operator row is
 * needed.
 */
export async function createTestTenant(
  db: Db,
  options: { label?: string; pool?: Partial<Parameters<typeof createPool>[2]> } = {},
): Promise<TestTenant> {
  const name = `${options.label ?? 't'}-${randomBytes(5).toString('hex')}`;
  const tenantId = newId('tnt');
  await db.$transaction(async (tx) => {
    await tx.tenant.create({ data: { id: tenantId, name } });
    await projectResource(tx, resource.tenant(tenantId), tenantId);
  });
  const as = (role: Role) => principalOf('operator', newId('op'), [[tenantId, role]]);
  const admin = as('admin');
  const site = await createSite(db, admin, { tenantId, name: 'site-a' });
  const pool = await createPool(db, admin, { tenantId, siteId: site.id, name: 'pool-a', agent: 'bcd', ...options.pool });
  let pools = 0;
  const newPool = async (agent: 'bcd' | 'none' = 'bcd') =>
    (await createPool(db, admin, { tenantId, siteId: site.id, name: `pool-${++pools}`, agent })).id;
  return {
    tenantId,
    name,
    admin,
    operator: as('operator'),
    viewer: as('viewer'),
    site,
    pool,
    siteId: site.id,
    poolId: pool.id,
    as,
    newPool,
  };
}

/** The domain error a call fails with (through tRPC or directly), as `{ code, field }`. */
export async function failure(promise: Promise<unknown>): Promise<{ code: string; field?: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const domain = toDomainError(error);
    if (!domain) throw error;
    return { code: domain.code, field: domain.field, message: domain.message };
  }
  throw new Error('expected the call to fail');
}

/** Every spelling of a token's secret that must never be written anywhere but the create answer. */
export function secretForms(token: string): string[] {
  const parsed = parseJoinToken(token);
  if (!parsed) throw new Error('not a join token');
  const hash = hashTokenSecret(parsed.secret);
  return [token, parsed.secret, hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')];
}

/** The first text holding any form of any token, or undefined. */
export function findSecretLeak(tokens: string[], texts: string[]): string | undefined {
  const forms = tokens.flatMap(secretForms).map((f) => f.toLowerCase());
  return texts.find((text) => forms.some((form) => text.toLowerCase().includes(form)));
}

/** Asserts that no form of any token occurs in `texts` or in any event or audit row of the database. */
export async function expectNoSecretLeaks(db: Db, tokens: string[], texts: string[]) {
  expect(tokens.length).toBeGreaterThan(0);
  const rows = await db.$queryRaw<{ text: string }[]>`
    SELECT type || ' ' || data::text AS text FROM events
    UNION ALL SELECT action || ' ' || actor || ' ' || resource || ' ' || data::text FROM audit_log`;
  expect(rows.some((r) => r.text.startsWith('security.join-token.created'))).toBe(true);
  expect(findSecretLeak(tokens, [...texts, ...rows.map((r) => r.text)])).toBeUndefined();
}

/** Collects everything written to this process's stderr (the server's log lines) while tests run. */
export function captureStderr(): { lines: string[]; stop(): void } {
  const lines: string[] = [];
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
    lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  return { lines, stop: () => void (process.stderr.write = original) };
}
