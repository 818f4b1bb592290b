import { afterAll, beforeAll } from 'vitest';
import { loadIdentity, type LoadedIdentity } from '../agent/renew/identity';
import { testDb } from './db';
import { createTestTenant } from './fixtures';
import { mintToken } from './join-harness';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from './renew-harness';

// A renewal test file's harness (the server and gateway it renews through) and the nodes it joins. `r` is set by
// useRenewHarness()'s beforeAll; each test file has its own (integration files do not share modules).

export let r: RenewHarness;

/** Creates the file's renew harness before its tests and closes it after them. */
export function useRenewHarness(options?: Parameters<typeof createRenewHarness>[0]) {
  beforeAll(async () => {
    r = await createRenewHarness(options);
  });
  afterAll(async () => {
    await r?.close();
  });
}

/** A node joined through the gateway with the token of a new tenant: its identity, and the tenant. */
export async function joinedNode(): Promise<LoadedIdentity & { tenantId: string }> {
  const t = await createTestTenant(testDb());
  const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
  return Object.assign(await loadIdentity(dir), { tenantId: t.tenantId });
}
