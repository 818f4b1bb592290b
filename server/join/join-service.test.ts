import { createHash } from 'node:crypto';
import { describe, expect, it, beforeAll } from 'vitest';
import { sealTokenSync } from '../../agent/seal-token';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { JOIN_REFUSED } from '../../protocol/join-wire';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});

const eventsOf = (tenantId: string, type: string) => testDb().event.findMany({ where: { tenantId, type }, orderBy: { id: 'asc' } });

describe('JoinService: an admitted join', () => {
  it('admits a machine with a token in one transaction and answers a verifiable signed envelope', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const { token, id: tokenId } = await mintToken(t, { maxUses: 2 });
    const claims = machineClaims();
    const result = await agentJoin(h, token!, claims);
    expect(result.status).toBe(200);
    const answer = result.answer!;
    expect(answer).toMatchObject({
      status: 'joined',
      siteId: t.site.id,
      role: 'node',
      trustDomain: 'test.example.com',
      csrSha256: result.keys.csrSha256,
    });
    expect(answer.certificateChain).toHaveLength(2);
    expect(answer.certificateChain[1]).toBe(h.crypto.nodeCaCertificate);

    const node = await db.node.findUniqueOrThrow({ where: { id: answer.nodeId } });
    expect(node).toMatchObject({
      tenantId: t.tenantId,
      poolId: t.pool.id,
      siteId: t.site.id,
      role: 'node',
      state: 'adopted',
      trust: 'tenant-owned',
      identityGeneration: 1,
      hardwareKeyTrusted: true,
      attestor: 'join-token',
    });
    const certs = await db.nodeCert.findMany({ where: { nodeId: node.id } });
    expect(certs).toHaveLength(1);
    expect(Buffer.from(certs[0]!.der).toString('base64')).toBe(answer.certificateChain[0]);
    expect(certs[0]!.identityGeneration).toBe(1);
    expect(await db.authzResource.findUnique({ where: { resource: `compute-node/${node.id}` } })).toMatchObject({ tenantId: t.tenantId });
    expect((await db.joinToken.findUniqueOrThrow({ where: { id: tokenId } })).usesLeft).toBe(1);

    const [joined] = await eventsOf(t.tenantId, 'node.joined');
    expect(joined!.data).toMatchObject({
      nodeId: node.id,
      attestor: 'join-token',
      reclaim: false,
      hardwareKeyTrusted: true,
      certificateSerial: certs[0]!.serial,
      nodeKey: 'unattested',
    });
    expect(await eventsOf(t.tenantId, 'node.adopted')).toHaveLength(1);
    const audit = await db.auditEntry.findFirstOrThrow({ where: { tenantId: t.tenantId, action: 'node.joined' } });
    expect(audit).toMatchObject({ actor: `join-token:${tokenId}`, resource: `compute-node/${node.id}` });
  });

  it('leaves a node of a pool with acceptance checks adopting, without node.adopted', async () => {
    const t = await createTestTenant(testDb(), { pool: { acceptanceChecks: ['gpu-burn'] } });
    const { token } = await mintToken(t);
    const result = await agentJoin(h, token!, machineClaims());
    expect(result.status).toBe(200);
    expect((await testDb().node.findUniqueOrThrow({ where: { id: result.answer!.nodeId } })).state).toBe('adopting');
    expect(await eventsOf(t.tenantId, 'node.adopted')).toHaveLength(0);
  });

  it('answers INVALID_CONFIG (503) when the server has no JoinService keys', async () => {
    const { JoinService } = await import('./join-service');
    const bare = new JoinService({ pool: h.pool, loadCrypto: async () => null, loadRootTenantId: async () => h.rootTenantId });
    const answer = await bare.join({});
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body.toString())).toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

describe('JoinService: refusals', () => {
  type Case = {
    reason: string;
    routedToToken: boolean;
    setup: (t: Awaited<ReturnType<typeof createTestTenant>>) => Promise<{
      token: string;
      claims?: ReturnType<typeof machineClaims>;
      role?: string;
      mutate?: (b: Record<string, unknown>) => void;
    }>;
  };
  const db = () => testDb();
  const cases: Case[] = [
    {
      reason: 'join:malformed',
      routedToToken: false,
      setup: async (t) => ({
        token: (await mintToken(t)).token!,
        mutate: (b) => {
          b.claims = 'not-an-object';
        },
      }),
    },
    {
      reason: 'join:csr',
      routedToToken: false,
      setup: async (t) => {
        // A seal made for these very bytes, so the seal opens and the CSR itself is what fails.
        const token = (await mintToken(t)).token!;
        const notACsr = Buffer.from('not a csr');
        const sealedToken = sealTokenSync(token, h.trust.encryptionJwk, createHash('sha256').update(notACsr).digest('hex'));
        return {
          token,
          mutate: (b) => {
            b.csr = notACsr.toString('base64');
            b.sealedToken = sealedToken;
          },
        };
      },
    },
    {
      reason: 'join:token',
      routedToToken: false,
      // A CSR swapped after sealing: the seal names another CSR, which is checked first.
      setup: async (t) => ({
        token: (await mintToken(t)).token!,
        mutate: (b) => {
          b.csr = Buffer.from('not a csr').toString('base64');
        },
      }),
    },
    { reason: 'join-token:malformed', routedToToken: false, setup: async () => ({ token: 'bcjt_not-a-token' }) },
    {
      reason: 'join-token:unknown',
      routedToToken: false,
      setup: async () => ({ token: 'bcjt_jt_01m8ma917s0he7rk4w7m1b0zvj.' + 'A'.repeat(43) }),
    },
    {
      reason: 'join-token:secret-mismatch',
      routedToToken: false,
      setup: async (t) => ({ token: (await mintToken(t)).token!.replace(/\..*/, '.' + 'B'.repeat(42) + 'A') }),
    },
    {
      reason: 'join:token',
      routedToToken: false,
      setup: async (t) => {
        // A seal made for another CSR: the gateway pairing a sealed blob with a CSR of its own.
        const other = await agentJoinBody(h, (await mintToken(t)).token!);
        return {
          token: (await mintToken(t)).token!,
          mutate: (b) => {
            b.sealedToken = other.sealedToken;
          },
        };
      },
    },
    {
      reason: 'join-token:revoked',
      routedToToken: true,
      setup: async (t) => {
        const m = await mintToken(t);
        await db().joinToken.update({ where: { id: m.id }, data: { revokedAt: new Date() } });
        return { token: m.token! };
      },
    },
    {
      reason: 'join-token:expired',
      routedToToken: true,
      setup: async (t) => {
        const m = await mintToken(t);
        await db().joinToken.update({ where: { id: m.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
        return { token: m.token! };
      },
    },
    {
      reason: 'join-token:exhausted',
      routedToToken: true,
      setup: async (t) => {
        const m = await mintToken(t);
        await db().joinToken.update({ where: { id: m.id }, data: { usesLeft: 0 } });
        return { token: m.token! };
      },
    },
    { reason: 'join-token:role-mismatch', routedToToken: true, setup: async (t) => ({ token: (await mintToken(t)).token!, role: 'site' }) },
    {
      reason: 'join:expect',
      routedToToken: true,
      setup: async (t) => ({ token: (await mintToken(t, { expect: { serial: 'SN-7701' } })).token! }),
    },
    {
      reason: 'join:placeholder-hardware',
      routedToToken: true,
      setup: async (t) => ({
        token: (await mintToken(t)).token!,
        claims: {
          productUuid: '00000000-0000-0000-0000-000000000000',
          productSerial: 'To Be Filled By O.E.M.',
          macs: ['3c:ec:ef:00:00:01'],
        },
      }),
    },
    {
      reason: 'join:reclaim',
      routedToToken: true,
      setup: async (t) => {
        const claims = machineClaims();
        expect((await agentJoin(h, (await mintToken(t)).token!, claims)).status).toBe(200);
        return { token: (await mintToken(t)).token!, claims };
      },
    },
    {
      reason: 'join:pool',
      routedToToken: true,
      setup: async (t) => {
        const m = await mintToken(t);
        await db().pool.update({ where: { id: t.pool.id }, data: { agent: 'none' } });
        return { token: m.token! };
      },
    },
    {
      reason: 'join:tenant',
      routedToToken: true,
      setup: async (t) => {
        const m = await mintToken(t);
        const other = await createTestTenant(db());
        await db().pool.update({ where: { id: t.pool.id }, data: { ownerTenantId: other.tenantId } });
        return { token: m.token! };
      },
    },
    {
      reason: 'join:site',
      routedToToken: true,
      setup: async (t) => {
        const m = await mintToken(t);
        const site = await db().site.create({
          data: { id: `site_${Date.now().toString(36)}x`, ownerTenantId: t.tenantId, name: 'moved', kind: 'custom' },
        });
        await db().joinToken.update({ where: { id: m.id }, data: { siteId: site.id } });
        return { token: m.token! };
      },
    },
    {
      reason: 'join:pool-attestor',
      routedToToken: true,
      setup: async (t) => {
        const m = await mintToken(t);
        await db().pool.update({ where: { id: t.pool.id }, data: { policy: { joinAttestors: ['tpm'] } } });
        return { token: m.token! };
      },
    },
  ];

  it.each(cases)(
    '$reason: the same 403 bytes, an event with the reason, routed correctly, nothing consumed',
    async ({ reason, routedToToken, setup }) => {
      const t = await createTestTenant(db());
      const { token, claims, role, mutate } = await setup(t);
      const before = await db().joinToken.findMany({ where: { tenantId: t.tenantId }, select: { id: true, usesLeft: true } });
      const nodesBefore = await db().node.count({ where: { tenantId: t.tenantId } });
      const result = await agentJoin(h, token, claims ?? machineClaims(), { role, mutate });
      expect(result.status).toBe(403);
      expect(result.bytes.equals(JOIN_REFUSED.body)).toBe(true);
      expect(result.json).toEqual({ code: 'ACCESS_DENIED', message: 'Join refused' });

      const routedTo = routedToToken ? t.tenantId : h.rootTenantId;
      const events = (await eventsOf(routedTo, 'security.join.refused')).filter((e) => (e.data as { reason: string }).reason === reason);
      expect(events.length).toBeGreaterThanOrEqual(1);
      const data = events[events.length - 1]!.data as Record<string, unknown>;
      expect(data).toMatchObject({ attestor: 'join-token', reason, suppressed: expect.any(Number) });
      // Once the secret verified (routed to the token's tenant) the event names the token's id; a join:expect
      // refusal names the binding that failed (the name only, never a value).
      const extra = [...(routedToToken ? ['tokenId'] : []), ...(reason === 'join:expect' ? ['expectField'] : [])];
      expect(Object.keys(data).sort()).toEqual(['attestor', 'csrSha256', 'hardwareKey', 'reason', 'role', 'suppressed', ...extra].sort());
      if (routedToToken) expect(data.tokenId).toBe(/^bcjt_([^.]+)\./.exec(token)![1]);
      if (reason === 'join:expect') expect(data.expectField).toBe('serial');
      expect(JSON.stringify(data)).not.toContain(token.slice(token.indexOf('.') + 1));
      if (!routedToToken) expect((await eventsOf(t.tenantId, 'security.join.refused')).length).toBe(0);
      // Nothing consumed, nothing created.
      const after = await db().joinToken.findMany({ where: { tenantId: t.tenantId }, select: { id: true, usesLeft: true } });
      expect(after).toEqual(before);
      expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(nodesBefore);
    },
  );
});

async function agentJoinBody(harness: JoinHarness, token: string) {
  const { prepareJoinAttempt } = await import('../../agent/join');
  return prepareJoinAttempt({ token, trust: harness.trust, claims: machineClaims() });
}
