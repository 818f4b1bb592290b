import { describe, expect, it } from 'vitest';
import { decideTpmJoin, type TpmDecisionInput, type TpmPoolRow, type TpmSiteRow } from './decide';
import type { VerifiedTpmAttestation } from './verify';

const EK = 'e'.repeat(64);
const STATEMENT = `urn:bc:tpm-ak:sha256:${'a'.repeat(64)}`;
const CSR = 'c'.repeat(64);

function facts(ekCertificate: VerifiedTpmAttestation['ekCertificate'] = null): VerifiedTpmAttestation {
  return { ekHash: EK, ek: {} as never, ekCertificate, akName: Buffer.alloc(34), akStatement: STATEMENT, nodeKeySpki: Buffer.alloc(91) };
}
const site = (tpm: Partial<TpmSiteRow['tpm']> = {}, extra: Partial<TpmSiteRow> = {}): TpmSiteRow => ({
  id: 'site_1',
  ownerTenantId: 'tnt_1',
  isArchived: false,
  tpm: { enrollment: true, pendingTtlSeconds: 3600, ekAllowList: [], ...tpm },
  ...extra,
});
const pool = (extra: Partial<TpmPoolRow> = {}): TpmPoolRow => ({
  id: 'pool_1',
  siteId: 'site_1',
  ownerTenantId: 'tnt_1',
  agent: 'bcd',
  isArchived: false,
  joinAttestors: null,
  ekAllowList: [],
  ...extra,
});
const rooted = { issuer: 'CN=Vendor Root', serialNumber: '01', chainsToRoot: true } as const;
const unrooted = {
  issuer: 'CN=Other Vendor',
  serialNumber: '02',
  chainsToRoot: false,
  chainProblem: 'no configured root or given intermediate issued it',
} as const;

function decide(input: Partial<TpmDecisionInput>) {
  return decideTpmJoin({
    facts: facts(),
    csrSha256: CSR,
    role: 'node',
    site: site(),
    pool: pool(),
    poolNamed: true,
    boundNode: null,
    request: null,
    approvedPool: null,
    ...input,
  });
}

describe('decideTpmJoin', () => {
  it('admits a vendor-rooted EK into the named pool with the AK statement and nodeKey tpm', () => {
    expect(decide({ facts: facts(rooted) })).toEqual({
      kind: 'admit',
      by: 'vendor-root',
      tenantId: 'tnt_1',
      siteId: 'site_1',
      poolId: 'pool_1',
      reclaim: null,
      consumesRequestId: null,
      statement: STATEMENT,
      nodeKey: 'tpm',
    });
  });

  it("admits an EK on the site's or the pool's allow-list", () => {
    expect(decide({ site: site({ ekAllowList: [EK] }) })).toMatchObject({ kind: 'admit', by: 'site-allow-list' });
    expect(decide({ pool: pool({ ekAllowList: [EK] }) })).toMatchObject({ kind: 'admit', by: 'pool-allow-list' });
    // Another pool's list admits nothing here.
    expect(decide({ pool: pool({ ekAllowList: ['f'.repeat(64)] }) })).toMatchObject({ kind: 'defer' });
  });

  it('enrolls any other activated EK as a join request keyed by its hash, showing issuer and AK', () => {
    expect(decide({ facts: facts(unrooted) })).toEqual({
      kind: 'defer',
      tenantId: 'tnt_1',
      siteId: 'site_1',
      request: {
        attestor: 'tpm',
        machineKey: `tpm-ek:${EK}`,
        csrSha256: CSR,
        pendingTtlSeconds: 3600,
        poolId: 'pool_1',
        ekCertified: false,
        tpm: {
          ekHash: EK,
          ekIssuer: 'CN=Other Vendor',
          ekChainProblem: 'no configured root or given intermediate issued it',
          akStatement: STATEMENT,
        },
      },
    });
    expect(decide({ pool: null, poolNamed: false })).toMatchObject({
      kind: 'defer',
      request: { poolId: null, tpm: { ekIssuer: 'no EK certificate', ekChainProblem: null } },
    });
    // A trusted EK with no pool named waits for an operator to pick the pool.
    expect(decide({ facts: facts(rooted), pool: null, poolNamed: false })).toMatchObject({ kind: 'defer', request: { ekCertified: true } });
  });

  it("refuses an unlisted EK when the site's enrollment is off, but not a trusted one", () => {
    expect(decide({ site: site({ enrollment: false }) })).toEqual({ kind: 'refuse', reason: 'tpm:enrollment', tenantId: 'tnt_1' });
    expect(decide({ site: site({ enrollment: false }), facts: facts(rooted) })).toMatchObject({ kind: 'admit' });
  });

  it('an approved request for this CSR admits into the approved pool and is consumed; others refuse', () => {
    const approved = { id: 'jreq_1', state: 'approved' as const, csrSha256: CSR, poolId: 'pool_2', isExpired: false };
    expect(decide({ request: approved, approvedPool: pool({ id: 'pool_2' }) })).toMatchObject({
      kind: 'admit',
      by: 'approval',
      poolId: 'pool_2',
      consumesRequestId: 'jreq_1',
    });
    expect(decide({ request: { ...approved, csrSha256: 'd'.repeat(64) }, approvedPool: pool() })).toMatchObject({
      kind: 'refuse',
      reason: 'tpm:request',
    });
    expect(decide({ request: { ...approved, state: 'rejected' } })).toMatchObject({ kind: 'refuse', reason: 'tpm:request' });
    expect(decide({ request: approved, approvedPool: pool({ id: 'pool_2', isArchived: true }) })).toMatchObject({
      kind: 'refuse',
      reason: 'tpm:pool',
    });
    // An expired approval is no approval: the machine is enrolled again.
    expect(decide({ request: { ...approved, isExpired: true } })).toMatchObject({ kind: 'defer' });
  });

  it('an unchanged EK reclaims its node in its pool; a retired node or another site refuses', () => {
    const bound = { id: 'node_1', tenantId: 'tnt_1', siteId: 'site_1', poolId: 'pool_9', state: 'adopted', identityGeneration: 3 };
    expect(decide({ boundNode: bound, pool: null, poolNamed: false })).toMatchObject({
      kind: 'admit',
      by: 'reclaim',
      poolId: 'pool_9',
      reclaim: bound,
    });
    expect(decide({ boundNode: { ...bound, state: 'retired' } })).toMatchObject({ kind: 'refuse', reason: 'tpm:reclaim' });
    expect(decide({ boundNode: { ...bound, siteId: 'site_2' } })).toMatchObject({ kind: 'refuse', reason: 'tpm:reclaim' });
  });

  it('refuses another role, a missing or archived site, and a pool the join may not land in', () => {
    expect(decide({ role: 'site' })).toMatchObject({ reason: 'tpm:role' });
    expect(decide({ site: null })).toEqual({ kind: 'refuse', reason: 'tpm:site', tenantId: null });
    expect(decide({ site: site({}, { isArchived: true }) })).toMatchObject({ reason: 'tpm:site' });
    for (const bad of [
      { isArchived: true },
      { agent: 'none' },
      { siteId: 'site_2' },
      { ownerTenantId: 'tnt_2' },
      { joinAttestors: ['join-token'] },
    ]) {
      expect(decide({ facts: facts(rooted), pool: pool(bad) })).toMatchObject({ kind: 'refuse', reason: 'tpm:pool' });
    }
    expect(decide({ pool: null, poolNamed: true })).toMatchObject({ reason: 'tpm:pool' });
    expect(decide({ facts: facts(rooted), pool: pool({ joinAttestors: ['tpm'] }) })).toMatchObject({ kind: 'admit' });
  });
});
