import { createHash, randomBytes, timingSafeEqual, type X509Certificate } from 'node:crypto';
import type pg from 'pg';
import { newId } from '../../../ids';
import { challengeMismatch, consumeChallenges, loadChallenges, type StoredChallenge } from '../../challenges';
import { parseCsr } from '../../crypto/csr';
import { JoinRefusal } from '../../crypto/refusal';
import { refuse, type Admission } from '../../decide';
import type { PreparedJoin } from '../../prepare';
import { JOIN_REQUESTS_CHANNEL } from '../../../requests/request-store-sql';
import type { Attestor, AttestorInput, AttestorVerdict } from '../types';
import {
  decideTpmJoin,
  TPM_MACHINE_KEY_PREFIX,
  type TpmBoundNode,
  type TpmJoinRequestRow,
  type TpmPoolRow,
  type TpmSiteRow,
} from './decide';
import { ekRootsFromEnvironment } from './ek-certificate';
import { makeCredential } from './make-credential';
import { TpmCheckFailure } from './reasons';
import { tpmSiteSettings } from './settings';
import { verifyTpmAttestation, type VerifiedTpmAttestation } from './verify';
import { parseTpmAttestation } from './wire';

/** How long a credential challenge can be answered. */
const TPM_CHALLENGE_TTL_SECONDS = 60;
const RETRY_AFTER_SECONDS = 30;

/** What preparation proved, as plain JSON (it crosses from a preparation thread). */
type TpmEvidence =
  | { round: 1; subject: string; credentialBlob: string; encryptedSecret: string; answerSha256: string }
  | {
      round: 2;
      subject: string;
      nonce: string;
      secretSha256: string;
      siteId: string;
      poolId: string | null;
      ekHash: string;
      ekIssuer: string | null;
      ekChainsToRoot: boolean;
      ekChainProblem: string | null;
      akStatement: string;
    };

let ekRoots: { directory: string | undefined; roots: X509Certificate[] } | undefined;
/** The vendor roots, read once per thread and setting (BETTER_COMPUTE_TPM_EK_ROOTS). */
function roots(): X509Certificate[] {
  const directory = process.env.BETTER_COMPUTE_TPM_EK_ROOTS;
  if (!ekRoots || ekRoots.directory !== directory) ekRoots = { directory, roots: ekRootsFromEnvironment() };
  return ekRoots.roots;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

/** The challenge's subject: the EK and the AK it was made for (MakeCredential binds both). */
const subjectOf = (facts: VerifiedTpmAttestation) => `${facts.ekHash}:${facts.akName.toString('hex')}`;

/**
 * Round one and round two of a `tpm` join (docs/tpm-attestation.md), off the event loop: every check of the
 * attestation, then either a credential challenge (MakeCredential of a fresh secret to the EK for the AK's
 * Name; the core stores the nonce with the secret's hash) or round two's activation, whose nonce and secret
 * the decision checks against the stored challenge.
 */
function prepareTpm(request: { body: Readonly<Record<string, unknown>>; csrDer: Buffer; csrSha256: string }) {
  let evidence: TpmEvidence;
  try {
    const attestation = parseTpmAttestation(request.body.attestation);
    const csr = parseCsr(request.csrDer);
    const verdict = verifyTpmAttestation(attestation, {
      csrSha256: request.csrSha256,
      csrSpki: csr.spkiDer,
      ekRoots: roots(),
      now: new Date(),
    });
    if (!verdict.ok) throw new JoinRefusal(verdict.reason, verdict.detail);
    const { facts } = verdict;
    if (!attestation.activation) {
      const secret = randomBytes(32);
      const wrapped = makeCredential(facts.ek, facts.akName, secret);
      evidence = {
        round: 1,
        subject: subjectOf(facts),
        credentialBlob: wrapped.credentialBlob.toString('base64'),
        encryptedSecret: wrapped.encryptedSecret.toString('base64'),
        answerSha256: sha256(secret).toString('hex'),
      };
    } else {
      evidence = {
        round: 2,
        subject: subjectOf(facts),
        nonce: attestation.activation.nonce,
        secretSha256: sha256(attestation.activation.secret).toString('hex'),
        siteId: attestation.siteId,
        poolId: attestation.poolId ?? null,
        ekHash: facts.ekHash,
        ekIssuer: facts.ekCertificate?.issuer ?? null,
        ekChainsToRoot: facts.ekCertificate?.chainsToRoot === true,
        ekChainProblem:
          facts.ekCertificate && !facts.ekCertificate.chainsToRoot ? (facts.ekCertificate.chainProblem ?? 'does not chain') : null,
        akStatement: facts.akStatement,
      };
    }
  } catch (error) {
    if (error instanceof TpmCheckFailure) throw new JoinRefusal(error.reason, error.detail);
    throw error;
  }
  return { token: null, evidence };
}

interface TpmState {
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

const evidenceOf = (join: PreparedJoin) => join.evidence as TpmEvidence;

async function loadTpm(client: pg.PoolClient, joins: PreparedJoin[]): Promise<TpmState> {
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
  for (const n of bound.rows)
    state.bound.set(n.tpm_ek_sha256, {
      id: n.id,
      tenantId: n.tenant_id,
      siteId: n.site_id,
      poolId: n.pool_id,
      state: n.state,
      identityGeneration: n.identity_generation,
      role: n.role,
      labels: n.labels ?? {},
    } as TpmBoundNode);
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

function decideTpm(input: AttestorInput, state: TpmState): AttestorVerdict {
  const { join } = input;
  const evidence = evidenceOf(join);
  if (evidence.round === 1) {
    return {
      admitted: false,
      challenge: true,
      subject: evidence.subject,
      data: { credentialBlob: evidence.credentialBlob, encryptedSecret: evidence.encryptedSecret },
      answerSha256: Buffer.from(evidence.answerSha256, 'hex'),
      ttlSeconds: TPM_CHALLENGE_TTL_SECONDS,
      tenantId: null,
    };
  }
  // Round two: the nonce is spent whatever follows (a nonce is never good twice).
  const stored = state.challenges.get(evidence.nonce);
  if (stored) state.used.push(evidence.nonce);
  state.challenges.delete(evidence.nonce);
  const mismatch = challengeMismatch(stored, { csrSha256: join.csr.csrSha256, subject: evidence.subject });
  if (mismatch) {
    const reason =
      mismatch === 'unknown'
        ? 'tpm:challenge-unknown'
        : mismatch === 'expired'
          ? 'tpm:challenge-expired'
          : mismatch === 'csr'
            ? 'tpm:challenge-csr'
            : 'tpm:challenge-binding';
    return refuse(reason);
  }
  const expected = stored!.answerSha256;
  if (!expected || !timingSafeEqual(expected, Buffer.from(evidence.secretSha256, 'hex'))) return refuse('tpm:activation-secret');

  const site = state.sites.get(evidence.siteId) ?? null;
  const machineKey = `${TPM_MACHINE_KEY_PREFIX}${evidence.ekHash}`;
  const request = state.requests.get(machineKey) ?? null;
  const facts = {
    ekHash: evidence.ekHash,
    akStatement: evidence.akStatement,
    ekCertificate:
      evidence.ekIssuer === null
        ? null
        : {
            issuer: evidence.ekIssuer,
            serialNumber: '',
            chainsToRoot: evidence.ekChainsToRoot,
            ...(evidence.ekChainProblem ? { chainProblem: evidence.ekChainProblem } : {}),
          },
  } as unknown as VerifiedTpmAttestation;
  const decision = decideTpmJoin({
    facts,
    csrSha256: join.csr.csrSha256,
    role: join.role,
    site,
    pool: evidence.poolId ? (state.pools.get(evidence.poolId) ?? null) : null,
    poolNamed: evidence.poolId !== null,
    boundNode: state.bound.get(evidence.ekHash) ?? null,
    request,
    approvedPool: request?.poolId ? (state.pools.get(request.poolId) ?? null) : null,
  });
  if (decision.kind === 'refuse') return refuse(decision.reason, decision.tenantId);
  if (decision.kind === 'defer') {
    const isLive = request?.state === 'pending' && !request.isExpired;
    // A new enrollment needs room in the site's queue and its rate limits; a refresh of the EK's live request never does.
    if (!isLive) {
      const refused = input.requests.admitNew('tpm', decision.siteId, join.clientAddress);
      if (refused) return refuse(refused, decision.tenantId);
    }
    const id = isLive ? request.id : newId('jreq');
    state.requests.set(machineKey, {
      id,
      state: 'pending',
      csrSha256: join.csr.csrSha256,
      poolId: decision.request.poolId,
      isExpired: false,
    });
    state.deferred.push({
      id,
      tenantId: decision.tenantId,
      siteId: decision.siteId,
      poolId: decision.request.poolId,
      machineKey,
      csrSha256: join.csr.csrSha256,
      ttl: decision.request.pendingTtlSeconds,
      tpm: decision.request.tpm,
      ekCertified: decision.request.ekCertified,
      claims: join.claims,
      clientAddress: join.clientAddress ?? null,
    });
    return { admitted: false, deferred: true, requestId: id, tenantId: decision.tenantId, retryAfterSeconds: RETRY_AFTER_SECONDS };
  }
  // A trusted hardware key of another node: the same machine with a new TPM. It joins once that node is deleted.
  if (input.existing && input.existing.id !== decision.reclaim?.id) return refuse('tpm:reclaim', decision.tenantId);
  const pool = state.pools.get(decision.poolId);
  const siteRow = site!;
  state.admitted.set(join, { ekHash: evidence.ekHash, consumesRequestId: decision.consumesRequestId });
  const admission: Admission = {
    admitted: true,
    reclaim: decision.reclaim
      ? {
          id: decision.reclaim.id,
          tenantId: decision.reclaim.tenantId,
          siteId: decision.reclaim.siteId,
          poolId: decision.reclaim.poolId,
          role: 'node',
          identityGeneration: decision.reclaim.identityGeneration,
          labels: decision.reclaim.labels ?? {},
        }
      : null,
    tenantId: decision.tenantId,
    siteId: decision.siteId,
    poolId: decision.poolId,
    role: 'node',
    certRole: 'node',
    hardwareKeyTrusted: join.trustedKey !== null,
    trust: siteRow.kind !== 'custom' && siteRow.ownerTenantId === input.rootTenantId ? 'platform' : 'tenant-owned',
    state: pool?.hasChecks ? 'adopting' : 'adopted',
    actor: `tpm:${evidence.ekHash}`,
    statements: [decision.statement],
    nodeKey: 'tpm',
    // An approval's labels; an unchanged EK's reclaim keeps the node's (the write merges over them).
    ...(decision.consumesRequestId && request?.labels ? { labels: request.labels } : {}),
  };
  return admission;
}

const WRITE_TPM_REQUESTS_SQL = `
WITH recorded AS (
  INSERT INTO join_requests (id, tenant_id, site_id, pool_id, attestor, state, machine_key, claims, csr_sha256, tpm, ek_certified, expires_at, created_at,
                             client_address)
  SELECT id, tenant, site, pool, 'tpm', 'pending', mk, claims, csr, tpm, ekc, compute_now() + ttl * interval '1 second',
         date_trunc('milliseconds', compute_now()), caddr
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $8::jsonb[], $9::int[], $10::bool[], $11::text[])
      AS x(id, tenant, site, pool, mk, claims, csr, tpm, ttl, ekc, caddr)
  ON CONFLICT (id) DO UPDATE SET csr_sha256 = EXCLUDED.csr_sha256, tpm = EXCLUDED.tpm, ek_certified = EXCLUDED.ek_certified, claims = EXCLUDED.claims,
         expires_at = EXCLUDED.expires_at, client_address = EXCLUDED.client_address
   WHERE join_requests.state = 'pending'
  RETURNING id, tenant_id, site_id
)
SELECT pg_notify('${JOIN_REQUESTS_CHANNEL}', json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
  FROM recorded GROUP BY tenant_id, site_id`;

async function writeTpm(client: pg.PoolClient, state: TpmState, admitted: ReadonlyMap<PreparedJoin, string>): Promise<boolean> {
  let wrote = false;
  if (state.used.length) {
    await consumeChallenges(client, state.used);
    wrote = true;
  }
  if (state.deferred.length) {
    const d = state.deferred;
    await client.query(WRITE_TPM_REQUESTS_SQL, [
      d.map((r) => r.id),
      d.map((r) => r.tenantId),
      d.map((r) => r.siteId),
      d.map((r) => r.poolId),
      d.map((r) => r.machineKey),
      d.map((r) => JSON.stringify(r.claims)),
      d.map((r) => r.csrSha256),
      d.map((r) => JSON.stringify(r.tpm)),
      d.map((r) => r.ttl),
      d.map((r) => r.ekCertified),
      d.map((r) => r.clientAddress),
    ]);
    wrote = true;
  }
  const bindings = [...state.admitted].flatMap(([join, facts]) => (admitted.has(join) ? [{ nodeId: admitted.get(join)!, ...facts }] : []));
  if (bindings.length) {
    // The EK now names this node (a reclaim keeps it); an approval the join used is consumed, naming the node.
    // Written before the node row of a new machine (the core inserts it after this write): the foreign key is deferred.
    await client.query(
      `INSERT INTO tpm_ek_bindings (ek_sha256, node_id) SELECT ek, id FROM unnest($1::text[], $2::text[]) AS b(id, ek)
       ON CONFLICT (ek_sha256) DO UPDATE SET node_id = EXCLUDED.node_id`,
      [bindings.map((b) => b.nodeId), bindings.map((b) => b.ekHash)],
    );
    const consumed = bindings.filter((b) => b.consumesRequestId);
    if (consumed.length) {
      await client.query(
        `WITH done AS (
           UPDATE join_requests j SET state = 'consumed', consumed_at = compute_now(), node_id = c.node
             FROM unnest($1::text[], $2::text[]) AS c(id, node) WHERE j.id = c.id RETURNING j.id, j.tenant_id, j.site_id)
         SELECT pg_notify('${JOIN_REQUESTS_CHANNEL}', json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
           FROM done GROUP BY tenant_id, site_id`,
        [consumed.map((b) => b.consumesRequestId), consumed.map((b) => b.nodeId)],
      );
    }
    wrote = true;
  }
  return wrote;
}

/**
 * The `tpm` attestor: a tokenless join proven by the machine's TPM 2.0 in two round trips (a credential
 * activation), admitted by a vendor-rooted EK certificate, an allow-listed EK hash, an operator's approval of
 * its enrollment, or its own node (a reclaim); docs/tpm-attestation.md.
 */
export const tpmAttestor: Attestor<TpmState> = {
  name: 'tpm',
  prepare: (request) => prepareTpm(request),
  holdKeys: (join) => {
    const evidence = evidenceOf(join);
    return evidence.round === 2 ? [`tpm-ek:${evidence.ekHash}`] : [];
  },
  // Round two may enroll the EK in the site it names: the core locks that site's queue before `load`.
  queueSite: (join) => {
    const evidence = evidenceOf(join);
    return evidence.round === 2 ? evidence.siteId : null;
  },
  load: (client, joins) => loadTpm(client, joins),
  decide: decideTpm,
  write: writeTpm,
};
