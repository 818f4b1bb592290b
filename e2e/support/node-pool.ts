import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, type Page } from '@playwright/test';
import { joinWithToken } from '../../agent/join';
import { uniqueName } from './env';
import { machineClaims } from './machine';
import { trpc } from './session';

/**
 * A new site (`<prefix>-site-…`) and bcd pool (`<prefix>-pool-…`) of the root tenant, and a join token for the
 * pool valid 10 minutes (for `maxUses` joins when given, else the server's default).
 */
export async function rootPoolWithToken(page: Page, prefix: string, maxUses?: number) {
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(page.request, 'query', 'tenants.list', {});
  const tenantId = tenants.find((t) => t.isRoot)!.id;
  const siteName = uniqueName(`${prefix}-site`);
  const site = await trpc<{ id: string }>(page.request, 'mutation', 'sites.create', { tenantId, name: siteName });
  const poolName = uniqueName(`${prefix}-pool`);
  const pool = await trpc<{ id: string }>(page.request, 'mutation', 'pools.create', {
    tenantId,
    siteId: site.id,
    name: poolName,
    agent: 'bcd',
  });
  const { token } = await trpc<{ token: string }>(page.request, 'mutation', 'joinTokens.create', {
    tenantId,
    poolId: pool.id,
    ttlSeconds: 600,
    ...(maxUses === undefined ? {} : { maxUses }),
    idempotencyKey: randomUUID(),
  });
  return { tenantId, pool, poolName, siteName, token };
}

/**
 * Joins a new machine with `token` as the agent does, pinning what the well-known document names, into an
 * identity directory of its own under the system's temporary directory (`dirPrefix`); the caller removes it
 * (it is removed here when the join throws). Expects the e2e server to run its gateway.
 */
export async function joinAsAgent(page: Page, baseURL: string, token: string, dirPrefix: string) {
  const doc = await (await page.request.get('/api/compute/.well-known/better-compute')).json();
  expect(doc.gateway, 'the e2e server runs its gateway').toBeTruthy();
  const identityDir = await mkdtemp(path.join(tmpdir(), dirPrefix));
  try {
    const answer = await joinWithToken({
      serverUrl: baseURL,
      token,
      claims: machineClaims(),
      pins: { joinSigningKeyPin: doc.join.signingKeyPin, joinEncryptionKeyPin: doc.join.encryptionKeyPin },
      identityDir,
    });
    const gateway = { gatewayUrl: doc.gateway.url, servingCaPin: doc.gateway.servingCaPin, gatewayServerName: doc.gateway.serverName };
    return { answer, nodeId: (answer as { nodeId: string }).nodeId, identityDir, gateway };
  } catch (error) {
    await rm(identityDir, { recursive: true, force: true });
    throw error;
  }
}
