import type pg from 'pg';
import type { StoredChallenge } from '../../challenges';
import { loadChallenges } from '../../challenges';
import type { PreparedJoin } from '../../prepare';
import { existingNode } from '../../locked-rows';
import { TPM_MACHINE_KEY_PREFIX, type TpmBoundNode, type TpmJoinRequestRow, type TpmPoolRow, type TpmSiteRow } from './decide';
import { evidenceOf, type TpmEvidence } from './prepare';
import { tpmSiteSettings } from './settings';

export interface TpmState {
  challenges: Map<string, StoredChallenge>;
  sites: Map<string, TpmSiteRow & { kind: string }>;
  pools: Map<string, TpmPoolRow & { hasChecks: boolean }>;
  bound: Map<string, TpmBoundNode>;
  requests: Map<string, TpmJoinRequestRow>;
  /** Decided this batch: nonces to consume, requests to record, approvals consumed, EKs to bind. */
  used: string[];
  deferred: Array<{
    id: string;
    tenantId: string;
    siteId: string;
    poolId: string | null;
    machineKey: string;
    csrSha256: string;
    ttl: number;
    tpm: object;
    ekCertified: boolean;
    claims: object;
    clientAddress: string | null;
  }>;
  admitted: Map<PreparedJoin, { ekHash: string; consumesRequestId: string | null }>;
}

/** Reads and locks round two's rows: its challenges, sites, EK bindings, the EKs' requests and the pools they name. */
export async function loadTpm(client: pg.PoolClient, joins: PreparedJoin[]): Promise<TpmState> {
  const second = joins.map(evidenceOf).filter((e): e is Extract<TpmEvidence, { round: 2 }> => e.round === 2);
  const state: TpmState = {
    challenges: new Map(),
    sites: new Map(),
    pools: new Map(),
    bound: new Map(),
    requests: new Map(),
    used: [],
    deferred: [],
    admitted: new Map(),
  };
  if (!second.length) return state;
  state.challenges = await loadChallenges(
    client,
    'tpm',
    second.map((e) => e.nonce),
  );
  const sites = await client.query(
    `SELECT id, owner_tenant_id, kind, archived_at IS NOT NULL AS archived, tpm FROM sites WHERE id = ANY($1::text[])`,
    [[...new Set(second.map((e) => e.siteId))]],
  );
  for (const s of sites.rows)
    state.sites.set(s.id, {
      id: s.id,
      ownerTenantId: s.owner_tenant_id,
      isArchived: s.archived,
      kind: s.kind,
      tpm: tpmSiteSettings(s.tpm),
    });
  const ekHashes = [...new Set(second.map((e) => e.ekHash))];
  const bound = await client.query(
    `SELECT n.id, n.tenant_id, n.site_id, n.pool_id, n.state, n.identity_generation, n.role, n.labels, b.ek_sha256 AS tpm_ek_sha256
       FROM tpm_ek_bindings b JOIN nodes n ON n.id = b.node_id WHERE b.ek_sha256 = ANY($1::text[]) ORDER BY n.id FOR UPDATE OF n, b`,
    [ekHashes],
  );
  for (const n of bound.rows) state.bound.set(n.tpm_ek_sha256, { ...existingNode(n), state: n.state } as TpmBoundNode);
  const requests = await client.query(
    `SELECT id, machine_key, state, csr_sha256, pool_id, expires_at <= compute_now() AS is_expired, approval_labels
       FROM join_requests WHERE attestor = 'tpm' AND machine_key = ANY($1::text[]) AND state IN ('pending', 'approved', 'rejected')
      ORDER BY machine_key, created_at DESC FOR UPDATE`,
    [ekHashes.map((h) => `${TPM_MACHINE_KEY_PREFIX}${h}`)],
  );
  // The newest live request per EK (rows come newest first within each EK).
  for (const q of requests.rows)
    if (!state.requests.has(q.machine_key))
      state.requests.set(q.machine_key, {
        id: q.id,
        state: q.state,
        csrSha256: q.csr_sha256,
        poolId: q.pool_id,
        isExpired: q.is_expired,
        labels: q.approval_labels ?? {},
      });
  const poolIds = [
    ...new Set(
      [
        ...second.map((e) => e.poolId),
        ...[...state.requests.values()].map((q) => q.poolId),
        ...[...state.bound.values()].map((n) => n.poolId),
      ].filter((id): id is string => Boolean(id)),
    ),
  ];
  const pools = await client.query(
    `SELECT id, site_id, owner_tenant_id, agent, archived_at IS NOT NULL AS archived, policy, cardinality(acceptance_checks) > 0 AS has_checks FROM pools WHERE id = ANY($1::text[])`,
    [poolIds],
  );
  for (const p of pools.rows) {
    const policy = (p.policy ?? {}) as { joinAttestors?: string[]; tpm?: { ekAllowList?: string[] } };
    state.pools.set(p.id, {
      id: p.id,
      siteId: p.site_id,
      ownerTenantId: p.owner_tenant_id,
      agent: p.agent,
      isArchived: p.archived,
      joinAttestors: policy.joinAttestors ?? null,
      ekAllowList: policy.tpm?.ekAllowList ?? [],
      hasChecks: p.has_checks,
    });
  }
  return state;
}
