import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCaller } from '../api/root';
import { startCliApi, type ApiServer } from '../../test/cli';
import { parseCloudConfig, type WrittenFile } from '../../test/cloud-config';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { loadPki } from '../pki/bundle/store';
import { bootstrapPins } from '../pki/pins-summary';
import { TOKEN_FILE } from './cloud-config';

const db = testDb();
let api: ApiServer;
let env: { BETTER_COMPUTE_URL: string; BETTER_COMPUTE_API_KEY: string };
let t: TestTenant;
let h: JoinHarness;
const SHA = { amd64: 'a'.repeat(64) };

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'userdata', role: 'operator', sharedPki: true }));
  h = await createJoinHarness();
});
afterAll(async () => {
  await api?.close();
});

async function joinedNode(tenant: TestTenant) {
  const joined = await agentJoin(h, (await mintToken(tenant)).token!, machineClaims());
  expect(joined.status).toBe(200);
  return joined.answer!.nodeId;
}

const input = (nodeId: string, tenantId = t.tenantId) => ({
  tenantId,
  nodeId,
  ttlSeconds: 900,
  serverUrl: 'https://compute.example.com',
  sha256: SHA,
});

describe('provisioning.userData', () => {
  it('answers user data holding the token in a 0400 file only, the pins, and a join by file and node id', async () => {
    const nodeId = await joinedNode(t);
    const answer = await createCaller({ db, principal: t.operator }).provisioning.userData(input(nodeId));
    expect(answer).toMatchObject({ nodeId, poolId: t.poolId });

    const row = await db.joinToken.findUniqueOrThrow({ where: { id: answer.tokenId } });
    expect(row).toMatchObject({ role: 'provisioned', nodeId, poolId: t.poolId, maxUses: 1, usesLeft: 1 });

    const doc = parseCloudConfig(answer.userData);
    const files = doc.write_files as WrittenFile[];
    const tokenFile = files.find((f) => f.path === TOKEN_FILE)!;
    expect(tokenFile).toMatchObject({ owner: 'root:root', permissions: '0400' });
    const token = tokenFile.content.trim();
    expect(token).toMatch(new RegExp(`^bcjt_${answer.tokenId}\\.`));
    // The token is in that file's content and nowhere else of the user data.
    expect(answer.userData.split(JSON.stringify(tokenFile.content).slice(1, -1)).length).toBe(2);
    expect(answer.userData.split(token.split('.')[1]!).length).toBe(2);
    const commands = doc.runcmd as string[][];
    expect(JSON.stringify(commands)).not.toContain(token.split('.')[1]!);
    for (const f of files.filter((x) => x !== tokenFile)) expect(f.content).not.toContain(token.split('.')[1]!);

    const join = commands.find((c) => c[1] === 'join')!;
    const arg = (name: string) => join[join.indexOf(name) + 1];
    expect(arg('--server')).toBe('https://compute.example.com');
    expect(arg('--token-file')).toBe(TOKEN_FILE);
    expect(arg('--node-id')).toBe(nodeId);
    // The install's pins, as bootstrapPins gives them for the deployment's PKI.
    const pins = bootstrapPins(await loadPki(db, process.env.BETTER_COMPUTE_SECRET!));
    expect(arg('--serving-ca-pin')).toBe(pins.servingCaPin);
    expect(arg('--join-signing-pin')).toBe(pins.joinSigningKeyPin);
    expect(arg('--join-encryption-pin')).toBe(pins.joinEncryptionKeyPin);
    // bcd comes from the control plane's download path, its digest checked.
    const install = files.find((f) => f.path.endsWith('install-bcd.sh'))!;
    expect(install.content).toContain('/downloads/bcd/$BCD_VERSION/linux-$ARCH');
    expect(install.content).toContain(SHA.amd64);

    // Audited, naming the token but never its secret.
    const audit = await db.auditEntry.findFirstOrThrow({ where: { tenantId: t.tenantId, action: 'provisioning.user-data' } });
    expect(audit).toMatchObject({ actor: t.operator.actor, resource: `compute-node/${nodeId}` });
    expect(audit.data).toMatchObject({ nodeId, poolId: t.poolId, tokenId: answer.tokenId });
    expect(JSON.stringify(audit.data)).not.toContain(token.split('.')[1]!);
  });

  it("is NOT_FOUND for another tenant's node, refused to viewers, and bounds the ttl", async () => {
    const other = await createTestTenant(db);
    const theirs = await joinedNode(other);
    const mine = await joinedNode(t);
    expect(await failure(createCaller({ db, principal: t.operator }).provisioning.userData(input(theirs)))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await failure(createCaller({ db, principal: t.operator }).provisioning.userData(input(theirs, other.tenantId)))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await failure(createCaller({ db, principal: t.viewer }).provisioning.userData(input(mine)))).toMatchObject({
      code: 'ACCESS_DENIED',
    });
    for (const ttlSeconds of [59, 86_401])
      expect(
        await failure(createCaller({ db, principal: t.operator }).provisioning.userData({ ...input(mine), ttlSeconds })),
      ).toMatchObject({
        code: 'INVALID_ARGUMENT',
        field: 'ttlSeconds',
      });
    // A pool of another site than the node's.
    const poolB = await other.newPool();
    expect(
      await failure(createCaller({ db, principal: t.operator }).provisioning.userData({ ...input(mine), poolId: poolB })),
    ).toMatchObject({ code: 'NOT_FOUND' });
    expect(await db.joinToken.count({ where: { nodeId: { in: [theirs, mine] } } })).toBe(0);
  });

  it('is served over REST with the API key, and --pool picks another pool of the site', async () => {
    const nodeId = await joinedNode(t);
    const poolB = await t.newPool();
    const response = await fetch(`${api.url}/api/compute/v1/tenants/${t.tenantId}/nodes/${nodeId}/user-data`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.BETTER_COMPUTE_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ poolId: poolB, ttlSeconds: 600, serverUrl: 'https://compute.example.com', sha256: SHA }),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { poolId: string; tokenId: string; userData: string };
    expect(answer.poolId).toBe(poolB);
    expect((await db.joinToken.findUniqueOrThrow({ where: { id: answer.tokenId } })).poolId).toBe(poolB);
  });
});
