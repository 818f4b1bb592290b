import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import { verifyJoinAnswer } from '../../agent/verify-answer';
import { newId } from '../../server/ids';
import { issueJoinToken } from '../../server/tokens/issue';
import { randomMac } from '../discovery-harness';
import { machineClaims } from '../join-harness';
import { defaultPool, newServerSecret, startServedDatabase, type ServerDatabase, type ServerProcess } from '../server-process';
import { rawHttpClient } from './http-client';

// The review's attacks on the approval queue, replayed from outside against the real server process
// (protocol.md "Discovery joins"): a PXE join that claims a known node's MAC beside its own bound MAC, and
// 50 claim variations on one discovery token. Both must end in ONE pending request and no certificate.

let database: ServerDatabase;
let server: ServerProcess;
let trust: JoinTrust;
const secret = newServerSecret();
const client = rawHttpClient(16);

beforeAll(async () => {
  ({ database, server, trust } = await startServedDatabase('discovery_queue', secret, { trustDomain: 'discovery-queue.example.com' }));
}, 120_000);

afterAll(async () => {
  client.close();
  await server?.stop();
  await database?.close();
});

async function discoveryToken(mac: string) {
  const pool = await defaultPool(database.db);
  const { token, record } = await issueJoinToken(database.db, {
    tenantId: pool.ownerTenantId,
    poolId: null,
    siteId: pool.siteId,
    role: 'discovery',
    ttlSeconds: 600,
    maxUses: 1,
    boundMac: mac,
    discovery: { ip: '10.9.8.7', workflowId: 'wf-outside', vouchedBy: 'module:boot', bootLeaseEpoch: 1 },
    createdBy: 'module:boot',
  });
  return { token: token!, tokenId: record.id, siteId: pool.siteId, tenantId: pool.ownerTenantId, poolId: pool.id };
}

/** POSTs the attempt to the server's /v1/join and verifies the signed answer as the agent would. */
async function postJoin(attempt: Awaited<ReturnType<typeof prepareJoinAttempt>>) {
  const answer = await client.send('POST', `${server.url}/api/compute/v1/join`, {
    body: attempt.body,
    headers: { 'content-type': 'application/json' },
  });
  if (answer.status !== 200) return { status: answer.status, answer: null };
  const verified = verifyJoinAnswer(JSON.parse(answer.body.toString()), {
    signingKeyPin: trust.signingKeyPin,
    signingCertificateDer: trust.signingCertificateDer,
    csrSha256: attempt.keys.csrSha256,
    publicKeySpkiDer: attempt.keys.spkiDer,
    expectedRole: 'ramdisk',
  });
  return { status: answer.status, answer: verified as { status: string; requestId?: string } };
}

describe('the approval queue, from outside', () => {
  it("a discovery join claiming a known node's MAC gets a pending request, not a certificate", { timeout: 60_000 }, async () => {
    const victimMac = randomMac();
    const lease = await discoveryToken(randomMac());
    const nodeId = newId('node');
    await database.db.node.create({
      data: {
        id: nodeId,
        tenantId: lease.tenantId,
        siteId: lease.siteId,
        poolId: lease.poolId,
        role: 'node',
        state: 'adopted',
        trust: 'platform',
        claims: { macs: [victimMac] },
        attestor: 'join-token',
      },
    });
    const bound = (await database.db.joinToken.findUniqueOrThrow({ where: { id: lease.tokenId } })).boundMac!;
    const attempt = await prepareJoinAttempt({
      token: lease.token,
      trust,
      claims: machineClaims({ macs: [bound, victimMac] }),
      role: 'discovery',
      attestor: 'discovery',
    });
    const result = await postJoin(attempt);
    expect(result.status).toBe(200);
    expect(result.answer).toMatchObject({ status: 'pending', requestId: expect.stringMatching(/^jreq_/) });
    expect(await database.db.nodeCert.count({ where: { node: { siteId: lease.siteId, role: 'discovery' } } })).toBe(0);
    expect(await database.db.joinRequest.count({ where: { tokenId: lease.tokenId, state: 'pending' } })).toBe(1);
    expect((await database.db.joinToken.findUniqueOrThrow({ where: { id: lease.tokenId } })).usesLeft).toBe(1);
  });

  it('50 claim variations on one token yield ONE live request, refreshed, never 50', { timeout: 120_000 }, async () => {
    const mac = randomMac();
    const lease = await discoveryToken(mac);
    const attempts = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        prepareJoinAttempt({
          token: lease.token,
          trust,
          claims: machineClaims({
            macs: [mac, randomMac()],
            productUuid: randomUUID(),
            productSerial: `SN-OUT-${i}`,
            hostname: `pxe-${i}`,
          }),
          role: 'discovery',
          attestor: 'discovery',
        }),
      ),
    );
    const results = await Promise.all(attempts.map(postJoin));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    expect(new Set(results.map((r) => r.answer?.requestId)).size).toBe(1);
    const requests = await database.db.joinRequest.findMany({
      where: { siteId: lease.siteId, mac: (await database.db.joinToken.findUniqueOrThrow({ where: { id: lease.tokenId } })).boundMac },
    });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.state).toBe('pending');
    expect(attempts.map((a) => a.keys.csrSha256)).toContain(requests[0]!.csrSha256);
  });
});
