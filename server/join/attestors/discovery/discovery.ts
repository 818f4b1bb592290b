import { newId } from '../../../ids';
import { checkPool, checkToken, hasBoundMac, nodeTrust, refuse, type LockedToken } from '../../decide';
import { firstMatchingRule } from '../../../rules/match';
import { CREATED_EVENT_LIMIT, EXPIRE_REQUESTS, WRITE_REQUESTS_SQL } from '../../../requests/request-store-sql';
import { matchesEntry, writeRuleDecisions, type LoadedRule } from './decided';
import { loadDiscovery, machineKeyOf, type DiscoveryState, type RecordedRequest } from './load';
import { ramdiskLife } from './ramdisk-life';
import { discoverySiteSettings } from './settings';
import { discoverySettings } from '../../../../protocol/api/discovery-settings';
import type { Attestor, AttestorVerdict } from '../types';
import { prepareSealedToken } from '../sealed-token';
import { CERT_ROLE_OF_TOKEN } from '../token-roles';
import { RAMDISK_ALLOWED_KINDS } from '../../../commands/allowed-kinds';
import { mergeLabels } from '../../../../protocol/api/labels';

/** How long the agent waits before it retries a deferred join. */
const RETRY_AFTER_SECONDS = 30;

/**
 * The `discovery` attestor (protocol.md "Discovery joins"): a PXE-booted ramdisk presenting a discovery
 * token, single use and bound to the MAC its boot step saw. In order: the token rules, the bound MAC, then
 * the site's `approval` policy: a known machine (the token's bound MAC, which the boot step vouched for, is a
 * permanent MAC of a node of the site; claims alone never count) under `unknown-machines` is admitted at
 * once and published as `node.join-request.auto-admitted`, naming the node it matched; any other
 * machine is admitted only by the retry whose CSR hash an operator approved (consuming the approval), and
 * waits in a join request otherwise (one per lease, refreshed by newer attempts; a new one is admitted by the
 * rule every deferring attestor shares, ../request-admission.ts: `discovery:queue-full` when the site's
 * `maxPendingRequests` wait, `discovery:rate-limited` past the new-request rate limits). A rejected request refuses
 * its token; an expired or consumed one refuses its CSR.
 */
export const discoveryAttestor: Attestor<DiscoveryState> = {
  name: 'discovery',

  // Its site settings (approval, pendingTtlSeconds, maxPendingRequests) and the life of the ramdisks it admits.
  siteSettings: discoverySiteSettings,
  renewal: { life: ramdiskLife },

  prepare: (request, context) => prepareSealedToken('discovery', request, context),

  // Discovery joins read and write join requests that a concurrent batch's uncommitted rows would hide:
  // at most one batch in flight holds discovery joins.
  holdKeys: () => ['attestor:discovery'],

  // The site's queue is locked by the core before `load` (LOCK_SITE_QUEUES): the rules, the expected machines
  // and the requests below are read under it.
  queueSite: (join, tokens) => {
    const token = tokens.get(join.token?.id ?? '');
    return token?.role === 'discovery' && token.boundMac ? token.siteId : null;
  },

  load: loadDiscovery,

  decide({ join, token, rootTenantId, requests }, state): AttestorVerdict {
    const refused = checkToken('discovery', join, token);
    if (refused) return refused;
    const t = token!;
    if (t.role !== 'discovery' || !t.boundMac) return refuse('discovery:role-mismatch', t.tenantId);
    if (!hasBoundMac(t, join)) return refuse('join:expect', t.tenantId, 'boundMac');

    // Labels: the token's, then the deciding source's over them (a rule, an expected machine or an approval).
    const admit = (
      poolId: string | null,
      pool: LockedToken['pool'],
      knownNodeId?: string,
      labels?: Record<string, string>,
    ): AttestorVerdict => {
      const poolRefusal = checkPool('discovery', t, pool, poolId);
      if (poolRefusal) return poolRefusal;
      const trust = nodeTrust({ ...t, poolId, pool }, rootTenantId);
      return {
        admitted: true,
        reclaim: null,
        tenantId: t.tenantId,
        siteId: t.siteId,
        poolId,
        role: t.role,
        certRole: CERT_ROLE_OF_TOKEN.discovery!,
        // A ramdisk's node row never claims the machine's hardware key: the installed OS joins later.
        hardwareKeyTrusted: false,
        // A ramdisk runs only what a ramdisk needs: its doctor.
        allowedKinds: [...RAMDISK_ALLOWED_KINDS],
        trust,
        state: 'adopted',
        actor: `join-token:${t.id}`,
        labels: mergeLabels(t.labels, labels),
        ...(knownNodeId ? { autoAdmitted: { matchedNodeId: knownNodeId, mac: t.boundMac! } } : {}),
      };
    };

    const settings = discoverySettings(t.site.discovery);
    const knownNodeId = state.known.get(join);
    if (settings.approval === 'unknown-machines' && knownNodeId) return admit(null, null, knownNodeId);

    const machineKey = machineKeyOf(t)!;
    const latest = state.latest.get(machineKey);
    const sameCsr = latest?.csrSha256 === join.csr.csrSha256;
    if (latest?.state === 'approved' && !latest.isExpired) {
      if (!sameCsr) return refuse('discovery:csr-mismatch', t.tenantId);
      const verdict = admit(latest.poolId, latest.pool, undefined, latest.labels);
      if (verdict.admitted) {
        state.consumes.set(join, latest.id);
        // A second retry in this batch finds the approval used.
        latest.state = 'consumed';
      }
      return verdict;
    }
    if (latest?.state === 'rejected' && (sameCsr || latest.tokenId === t.id)) return refuse('discovery:rejected', t.tenantId);
    if (latest?.state === 'consumed' && sameCsr) return refuse('discovery:consumed', t.tenantId);
    const isLive = latest?.state === 'pending' && !latest.isExpired;
    const replaces = latest && !isLive && (latest.state === 'pending' || latest.state === 'approved');
    if (replaces && sameCsr) return refuse('discovery:request-expired', t.tenantId);

    // An expected machine (an import) the join matches admits it into the entry's pool without waiting.
    const entry = state.expected.find((e) => !state.usedExpected.has(e.id) && e.siteId === t.siteId && matchesEntry(e, t, join));
    if (entry) {
      const verdict = admit(entry.poolId, entry.pool, undefined, entry.labels);
      if (!verdict.admitted) return verdict;
      state.usedExpected.add(entry.id);
      if (replaces) state.expire.push(latest!.id);
      const id = isLive ? latest!.id : newId('jreq');
      state.ruleDecisions.set(join, {
        join,
        token: t,
        id,
        machineKey,
        state: 'consumed',
        ruleId: null,
        expectedId: entry.id,
        decidedBy: `import:${entry.importId}`,
        reason: `expected machine ${entry.id}`,
        poolId: entry.poolId,
      });
      state.latest.set(machineKey, {
        id,
        state: 'consumed',
        csrSha256: join.csr.csrSha256,
        tokenId: t.id,
        poolId: entry.poolId,
        isExpired: false,
        pool: entry.pool,
      });
      return verdict;
    }

    // The site's approval rules, on what the boot step vouched for and what the machine claims: the first
    // in force that matches decides here, in this join's transaction, so the machine never waits admitted.
    const facts = {
      attestor: 'discovery',
      vouchedMac: t.boundMac,
      vouchedIp: t.discovery?.ip ?? null,
      vouchedBy: t.discovery?.vouchedBy ?? null,
      claims: join.claims as Record<string, unknown>,
    };
    const rule = firstMatchingRule(state.rules.get(t.siteId) ?? [], facts, null, state.ruleUses) as LoadedRule | null;
    if (rule && rule.action !== 'leave') {
      const id = isLive ? latest!.id : newId('jreq');
      const verdict =
        rule.action === 'approve' ? admit(rule.poolId, rule.pool, undefined, rule.labels) : refuse('discovery:rejected', t.tenantId);
      // A rule whose pool would refuse the machine refuses it, naming the pool check; nothing is recorded.
      if (rule.action === 'approve' && !verdict.admitted) return verdict;
      if (rule.action === 'approve') state.ruleUses.set(rule.id, (state.ruleUses.get(rule.id) ?? 0) + 1);
      if (replaces) state.expire.push(latest!.id);
      const decided = rule.action === 'approve' ? 'consumed' : 'rejected';
      state.ruleDecisions.set(join, {
        join,
        token: t,
        id,
        machineKey,
        state: decided,
        ruleId: rule.id,
        expectedId: null,
        decidedBy: `rule:${rule.id}`,
        reason: rule.name,
        poolId: decided === 'consumed' ? rule.poolId : null,
      });
      state.latest.set(machineKey, {
        id,
        state: decided,
        csrSha256: join.csr.csrSha256,
        tokenId: t.id,
        poolId: rule.poolId,
        isExpired: false,
        pool: rule.pool,
      });
      return verdict;
    }
    if (!isLive) {
      // A new request needs room in the site's queue and its rate limits; a refresh of the lease's live request never does.
      const refused = requests.admitNew('discovery', t.siteId, join.clientAddress);
      if (refused) return refuse(refused, t.tenantId);
    }
    if (replaces) state.expire.push(latest!.id);
    const id = isLive ? latest!.id : newId('jreq');
    state.recorded.set(id, { join, token: t, id, machineKey });
    state.latest.set(machineKey, {
      id,
      state: 'pending',
      csrSha256: join.csr.csrSha256,
      tokenId: t.id,
      poolId: null,
      isExpired: false,
      pool: null,
    });
    return { admitted: false, deferred: true, requestId: id, tenantId: t.tenantId, retryAfterSeconds: RETRY_AFTER_SECONDS };
  },

  async write(client, state, admitted) {
    const consumes = [...state.consumes].filter(([join]) => admitted.has(join));
    const consumed = consumes.map(([, id]) => id);
    // A rule's admission the batch did not make after all (a race on the key) records nothing.
    const ruled = [...state.ruleDecisions.values()].filter((d) => d.state === 'rejected' || admitted.has(d.join));
    if (!state.recorded.size && !consumed.length && !ruled.length) return false;
    if (state.expire.length) await client.query(EXPIRE_REQUESTS, [state.expire]);
    if (ruled.length) await writeRuleDecisions(client, ruled, admitted);
    if (!state.recorded.size && !consumed.length) return true;
    const recorded = [...state.recorded.values()];
    const boot = (r: RecordedRequest) => r.token.discovery ?? {};
    await client.query(WRITE_REQUESTS_SQL, [
      recorded.map((r) => r.id),
      recorded.map((r) => r.token.tenantId),
      recorded.map((r) => r.token.siteId),
      recorded.map((r) => r.machineKey),
      recorded.map((r) => JSON.stringify(r.join.claims)),
      recorded.map((r) => r.join.hardware.key),
      recorded.map((r) => r.token.boundMac),
      recorded.map((r) => boot(r).ip ?? null),
      recorded.map((r) => boot(r).workflowId ?? null),
      recorded.map((r) => boot(r).vouchedBy ?? null),
      recorded.map((r) => boot(r).bootLeaseEpoch ?? null),
      recorded.map((r) => r.join.csr.csrSha256),
      recorded.map((r) => r.token.id),
      recorded.map((r) => discoverySettings(r.token.site.discovery).pendingTtlSeconds),
      consumed,
      CREATED_EVENT_LIMIT.keyPrefix,
      CREATED_EVENT_LIMIT.limit,
      CREATED_EVENT_LIMIT.window,
      // The join's own rule (PreparedJoin.trustedKey): the request says what its node would.
      recorded.map((r) => r.join.trustedKey !== null),
      // The node each consumed approval admitted, so the request and its node name each other.
      consumes.map(([join]) => admitted.get(join)!),
      recorded.map((r) => r.join.clientAddress ?? null),
    ]);
    return true;
  },
};
