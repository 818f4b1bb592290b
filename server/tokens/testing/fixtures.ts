import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Db } from '../../db/client';
import type { Role } from '../../authz/permissions';
import { principalOf, type Principal } from '../../authz/principal';
import { newId } from '../../ids';
import { createPool } from '../../pools/pools';
import { createSite } from '../../sites/sites';
import { createTenant, ensureRootTenant } from '../../tenants/tenants';
import { toDomainError } from '../../api/trpc';
import { hashTokenSecret, parseJoinToken } from '../secret';

export interface TenantFixture {
  tenantId: string;
  siteId: string;
  poolId: string;
  admin: Principal;
  /** A new caller of the tenant with `role`. */
  as(role: Role): Principal;
  /** Another pool in the same site. */
  newPool(agent?: 'bcd' | 'none'): Promise<string>;
}

/** A tenant of its own, with one site and one `bcd` pool, made through the domain functions. */
export async function createTenantFixture(db: Db, label: string): Promise<TenantFixture> {
  const root = await ensureRootTenant(db);
  const rootAdmin = principalOf('operator', newId('op'), [[root.id, 'admin']]);
  const tenant = await createTenant(db, rootAdmin, { name: `${label}-${randomBytes(4).toString('hex')}` });
  const as = (role: Role) => principalOf('operator', newId('op'), [[tenant.id, role]]);
  const admin = as('admin');
  const site = await createSite(db, admin, { tenantId: tenant.id, name: 'site-a' });
  let pools = 0;
  const newPool = async (agent: 'bcd' | 'none' = 'bcd') =>
    (await createPool(db, admin, { tenantId: tenant.id, siteId: site.id, name: `pool-${++pools}`, agent })).id;
  return { tenantId: tenant.id, siteId: site.id, poolId: await newPool(), admin, as, newPool };
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
