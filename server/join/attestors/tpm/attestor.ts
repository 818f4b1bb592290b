import { timingSafeEqual } from 'node:crypto';
import { newId } from '../../../ids';
import { challengeMismatch } from '../../challenges';
import { refuse, type Admission } from '../../decide';
import type { Attestor, AttestorInput, AttestorVerdict } from '../types';
import { decideTpmJoin, TPM_MACHINE_KEY_PREFIX } from './decide';
import { checkTpmRenewal } from './key-attestation';
import { loadTpm, type TpmState } from './load';
import { evidenceOf, prepareTpm } from './prepare';
import { tpmRequestFields } from './request-fields';
import { tpmSiteSettingsHook } from './settings';
import type { VerifiedTpmAttestation } from './verify';
import { writeTpm } from './write';

/** How long a credential challenge can be answered. */
const TPM_CHALLENGE_TTL_SECONDS = 60;
const RETRY_AFTER_SECONDS = 30;

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

/**
 * The `tpm` attestor: a tokenless join proven by the machine's TPM 2.0 in two round trips (a credential
 * activation), admitted by a vendor-rooted EK certificate, an allow-listed EK hash, an operator's approval of
 * its enrollment, or its own node (a reclaim); docs/tpm-attestation.md.
 */
export const tpmAttestor: Attestor<TpmState> = {
  name: 'tpm',
  siteSettings: tpmSiteSettingsHook,
  requestFields: tpmRequestFields,
  // A leaf naming the AK of its join renews only with that AK's attestation of the new key.
  renewal: { check: checkTpmRenewal },
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
