import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertApiKey } from '../api-keys/api-keys';
import { createCaller } from '../api/root';
import { newId } from '../ids';
import { runCliInProcess, startApiServer, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';

const AK = `urn:bc:tpm-ak:sha256:${'ab'.repeat(32)}`;

let t: TestTenant;
let api: ApiServer;

beforeAll(async () => {
  t = await createTestTenant(testDb(), { label: 'tpm-request' });
  api = await startApiServer(testDb());
});
afterAll(async () => {
  await api?.close();
});

/** A request as the tpm attestor's enrollment writes it: keyed by the EK hash, with the EK and AK to show. */
async function tpmRequest(ekHash: string, tpm: object | null) {
  const id = newId('jreq');
  await testDb().joinRequest.create({
    data: {
      id,
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: null,
      attestor: 'tpm',
      state: 'pending',
      machineKey: `tpm-ek:${ekHash}`,
      csrSha256: 'c'.repeat(64),
      expiresAt: new Date(Date.now() + 3_600_000),
      ...(tpm ? { tpm } : {}),
    },
  });
  return id;
}

describe('a tpm enrollment in the queue', () => {
  it('shows the EK hash, the EK certificate issuer or "no EK certificate", and the AK; other requests show none', async () => {
    const [EK, EK2, EK3] = [0, 1, 2].map(() => randomBytes(32).toString('hex')) as [string, string, string];
    const withCert = await tpmRequest(EK, {
      ekHash: EK,
      ekIssuer: 'CN=Vendor EK CA',
      ekChainProblem: 'no configured root or given intermediate issued it',
      akStatement: AK,
    });
    const without = await tpmRequest(EK2, { ekHash: EK2, ekIssuer: 'no EK certificate', ekChainProblem: null, akStatement: AK });
    const unreadable = await tpmRequest(EK3!, { ekHash: 1 });
    const { items } = await createCaller({ db: testDb(), principal: t.viewer }).joinRequests.list({
      tenantId: t.tenantId,
      poolId: t.poolId,
    });
    const byId = new Map(items.map((item) => [item.id, item]));
    expect(byId.get(withCert)!.tpm).toEqual({
      ekHash: EK,
      ekIssuer: 'CN=Vendor EK CA',
      ekChainProblem: 'no configured root or given intermediate issued it',
      akStatement: AK,
    });
    expect(byId.get(without)!.tpm).toMatchObject({ ekIssuer: 'no EK certificate', ekChainProblem: null });
    expect(byId.get(unreadable)!.tpm).toBeNull();
  });

  it('says which EKs are not vendor-certified, row by row and counted over every match for a bulk approval', async () => {
    const tenant = await createTestTenant(testDb(), { label: 'tpm-ek-certified' });
    // ekCertified as the tpm attestor writes it: true only for an EK certificate that chained to a vendor root.
    const at = async (
      ekHash: string,
      tpm: ({ ekChainProblem: string | null; ekIssuer: string } & Record<string, string | null>) | null,
      attestor = 'tpm',
    ) => {
      const id = newId('jreq');
      await testDb().joinRequest.create({
        data: {
          id,
          tenantId: tenant.tenantId,
          siteId: tenant.siteId,
          attestor,
          state: 'pending',
          machineKey: `tpm-ek:${ekHash}`,
          csrSha256: 'c'.repeat(64),
          expiresAt: new Date(Date.now() + 3_600_000),
          ...(tpm ? { tpm, ekCertified: tpm.ekIssuer !== 'no EK certificate' && tpm.ekChainProblem === null } : {}),
        },
      });
      return id;
    };
    const [EK, EK2, EK3] = [0, 1, 2].map(() => randomBytes(32).toString('hex')) as [string, string, string];
    const rooted = await at(EK, { ekHash: EK, ekIssuer: 'CN=Vendor EK CA', ekChainProblem: null, akStatement: AK });
    const unrooted = await at(EK2, { ekHash: EK2, ekIssuer: 'CN=Vendor EK CA', ekChainProblem: 'expired', akStatement: AK });
    const bare = await at(EK3, { ekHash: EK3, ekIssuer: 'no EK certificate', ekChainProblem: null, akStatement: AK });
    const discovery = await at(randomBytes(8).toString('hex'), null, 'discovery');
    const page = await createCaller({ db: testDb(), principal: tenant.viewer }).joinRequests.list({
      tenantId: tenant.tenantId,
      poolId: tenant.poolId,
    });
    const byId = new Map(page.items.map((item) => [item.id, item.ekCertified]));
    expect(Object.fromEntries([rooted, unrooted, bare, discovery].map((id) => [id, byId.get(id)]))).toEqual({
      [rooted]: true,
      [unrooted]: false,
      [bare]: false,
      [discovery]: null,
    });
    expect(page).toMatchObject({ total: 4, notVendorCertified: 2 });
  });

  it('the CLI lists the EK beside the claims', async () => {
    const EK = randomBytes(32).toString('hex');
    await tpmRequest(EK, { ekHash: EK, ekIssuer: 'no EK certificate', ekChainProblem: null, akStatement: AK });
    const key = (await insertApiKey(testDb(), { tenantId: t.tenantId, role: 'viewer', name: 'tpm queue' }, 'test')).key;
    const run = await runCliInProcess(['join-requests', 'list', '--tenant', t.tenantId, '--pool', t.poolId], {
      BETTER_COMPUTE_URL: api.url,
      BETTER_COMPUTE_API_KEY: key,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`ek ${EK.slice(0, 16)}… no EK certificate`);
  });
});
