import { randomUUID } from 'node:crypto';
import { postToGateway } from '../agent/renew/gateway-client';
import { loadIdentity } from '../agent/renew/identity';
import { clientIdentityOf } from '../agent/renew/tpm-renewal';
import { SITE_DISCOVERY_TOKEN_PATH, SITE_REDEEM_PATH } from '../protocol/site-agent-wire';
import { createPool } from '../server/pools/pools';
import { createSite } from '../server/sites/sites';
import { createSiteToken } from '../server/tokens/site-scoped';
import { testDb } from './db';
import type { TestTenant } from './fixtures';
import { machineClaims } from './join-harness';
import { BASE, joinThroughGateway, type RenewHarness } from './renew-harness';

/** A site token of the tenant's site (siteTokens.create), `maxUses` agents. */
export async function mintSiteToken(t: TestTenant, maxUses = 1) {
  const created = await createSiteToken(testDb(), t.admin, {
    tenantId: t.tenantId,
    siteId: t.siteId,
    ttlSeconds: 3600,
    maxUses,
    idempotencyKey: randomUUID(),
  });
  return created.token!;
}

/** A site agent of `t`'s site joined through the gateway: its identity directory and node id. */
export async function joinSiteAgent(r: RenewHarness, t: TestTenant) {
  const { dir, answer } = await joinThroughGateway(r, await mintSiteToken(t), machineClaims(), { role: 'site', expectedRole: 'site' });
  return { dir, nodeId: answer.nodeId };
}

interface SiteReply {
  status: number;
  text: string;
  json: Record<string, unknown>;
}

/** One call on the site agent's own mutual TLS through the gateway (no client certificate when `dir` is null). */
export async function siteCall(r: RenewHarness, dir: string | null, path: string, body: string | object): Promise<SiteReply> {
  const client = dir ? clientIdentityOf(await loadIdentity(dir)) : undefined;
  const reply = await postToGateway(r.target, client, `${BASE}${path}`, typeof body === 'string' ? body : JSON.stringify(body));
  const text = reply.body.toString('utf8');
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: the test looks at text
  }
  return { status: reply.status, text, json };
}

export const mint = (r: RenewHarness, dir: string | null, lease: object | string) => siteCall(r, dir, SITE_DISCOVERY_TOKEN_PATH, lease);
export const redeem = (r: RenewHarness, dir: string | null, ref: string) => siteCall(r, dir, SITE_REDEEM_PATH, { ref });

/** The reasons of the `security.site-agent.refused` events naming `nodeId`, oldest first. */
export async function refusalReasons(nodeId: string): Promise<string[]> {
  const rows = await testDb().event.findMany({ where: { type: 'security.site-agent.refused' }, orderBy: { id: 'asc' } });
  return rows
    .map((e) => e.data as { reason: string; nodeId: string | null })
    .filter((d) => d.nodeId === nodeId)
    .map((d) => d.reason);
}

/** `t` with another site of the same tenant (and a `bcd` pool there) as its site and pool. */
export async function secondSiteOf(t: TestTenant): Promise<TestTenant> {
  const site = await createSite(testDb(), t.admin, { tenantId: t.tenantId, name: `site-${randomUUID().slice(0, 8)}` });
  const pool = await createPool(testDb(), t.admin, { tenantId: t.tenantId, siteId: site.id, name: 'pool-a', agent: 'bcd' });
  return { ...t, site, pool, siteId: site.id, poolId: pool.id };
}
