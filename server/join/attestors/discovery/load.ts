import type pg from 'pg';
import { normalizeUuid } from '../../../../protocol/hardware-claims';
import type { RuleMatch } from '../../../rules/match';
import {
  SELECT_LATEST_REQUESTS,
  SELECT_EXPECTED_MACHINES,
  SELECT_SITE_RULES,
  type ExpectedMachineRow,
  type LatestRequestRow,
  type SiteRuleRow,
} from '../../../requests/request-store-sql';
import type { LockedToken } from '../../decide';
import type { PreparedJoin } from '../../prepare';
import { poolOf, serialsOf, type ExpectedEntry, type LoadedRule, type RuleDecision } from './decided';
import { SELECT_KNOWN_MACHINES, type KnownMachineRow } from './sql';

// What a discovery batch reads in its admission transaction, and the state its decisions keep.

/** A machine's latest join request, as the admission transaction locked it. */
interface LatestRequest {
  id: string;
  state: string;
  csrSha256: string;
  tokenId: string | null;
  poolId: string | null;
  isExpired: boolean;
  pool: LockedToken['pool'];
  /** What the approvals gave (approval_labels). */
  labels?: Record<string, string>;
}

/** A pending request this batch records (new id) or refreshes (existing id). */
export interface RecordedRequest {
  join: PreparedJoin;
  token: LockedToken;
  id: string;
  machineKey: string;
}

export interface DiscoveryState {
  /** Each site's approval rules in force, in order. */
  rules: Map<string, LoadedRule[]>;
  /** Admissions this batch's rules made, per rule, on top of their stored counts. */
  ruleUses: Map<string, number>;
  ruleDecisions: Map<PreparedJoin, RuleDecision>;
  /** Expected machines the batch's joins may match, and those a join of the batch already took. */
  expected: ExpectedEntry[];
  usedExpected: Set<string>;
  /** Joins whose token's bound MAC is a permanent MAC of a node of the token's site, with that node's id. */
  known: Map<PreparedJoin, string>;
  latest: Map<string, LatestRequest>;
  expire: string[];
  recorded: Map<string, RecordedRequest>;
  /** The approval each admitted join uses. */
  consumes: Map<PreparedJoin, string>;
}

/**
 * A discovery request is keyed by what the boot step vouched for, the token's lease: its site and bound MAC.
 * Never by the claims, which the caller writes: varying them must not open a second request, so one token
 * (one lease) holds at most one live request, and a newer attempt refreshes it whatever it claims.
 */
export function machineKeyOf(token: LockedToken): string | null {
  return token.boundMac ? `mac:${token.siteId}:${token.boundMac}` : null;
}

/** A normalized MAC (`3c:ec:…`) as the 12 hex digits `compute_node_macs` compares. */
const macDigits = (mac: string) => mac.replaceAll(':', '');

/** Reads and locks the batch's rows: known machines, the sites' rules and expected machines, each machine's latest request. */
export async function loadDiscovery(
  client: pg.PoolClient,
  joins: PreparedJoin[],
  tokens: ReadonlyMap<string, LockedToken>,
): Promise<DiscoveryState> {
  const state: DiscoveryState = {
    rules: new Map(),
    ruleUses: new Map(),
    ruleDecisions: new Map(),
    expected: [],
    usedExpected: new Set(),
    known: new Map(),
    latest: new Map(),
    expire: [],
    recorded: new Map(),
    consumes: new Map(),
  };
  const mine = joins.filter((j) => tokens.get(j.token?.id ?? '')?.role === 'discovery');
  if (!mine.length) return state;
  const bound = mine.filter((j) => tokens.get(j.token?.id ?? '')!.boundMac);
  const sites = [...new Set(bound.map((j) => tokens.get(j.token?.id ?? '')!.siteId))].sort();
  // Sent together (one wait), under the site locks the core took (LOCK_SITE_QUEUES).
  const [known, rules, expected] = await Promise.all([
    client.query<KnownMachineRow>(SELECT_KNOWN_MACHINES, [
      bound.map((_, i) => i),
      bound.map((j) => tokens.get(j.token?.id ?? '')!.siteId),
      bound.map((j) => macDigits(tokens.get(j.token?.id ?? '')!.boundMac!)),
      bound.map((j) => j.trustedKey),
    ]),
    client.query<SiteRuleRow>(SELECT_SITE_RULES, [sites]),
    // Serials and the product UUID count only for a trusted hardware key; the vouched MAC always does.
    client.query<ExpectedMachineRow>(SELECT_EXPECTED_MACHINES, [
      sites,
      bound.map((j) => tokens.get(j.token?.id ?? '')!.boundMac!),
      bound.filter((j) => j.trustedKey).flatMap((j) => serialsOf(j)),
      bound.filter((j) => j.trustedKey).flatMap((j) => normalizeUuid(j.claims.productUuid) ?? []),
    ]),
  ]);
  state.expected = expected.rows.map((r) => ({
    id: r.id,
    siteId: r.site_id,
    importId: r.import_id,
    serial: r.serial,
    productUuid: r.product_uuid,
    mac: r.mac,
    poolId: r.pool_id,
    pool: poolOf(r),
    labels: r.labels ?? {},
  }));
  for (const r of rules.rows) {
    const list = state.rules.get(r.site_id) ?? [];
    list.push({
      id: r.id,
      name: r.name,
      action: r.action,
      match: r.match as RuleMatch,
      maxAdmissions: r.max_admissions,
      admissions: r.admissions,
      validUntil: null,
      poolId: r.pool_id,
      pool: poolOf(r),
      labels: r.labels ?? {},
    });
    state.rules.set(r.site_id, list);
  }
  for (const row of known.rows) state.known.set(bound[row.i]!, row.node_id);
  const keys = [...new Set(mine.map((j) => machineKeyOf(tokens.get(j.token?.id ?? '')!)).filter((k): k is string => k !== null))].sort();
  for (const r of (await client.query<LatestRequestRow>(SELECT_LATEST_REQUESTS, [keys])).rows) {
    state.latest.set(r.machine_key, {
      id: r.id,
      state: r.state,
      csrSha256: r.csr_sha256,
      tokenId: r.token_id,
      poolId: r.pool_id,
      isExpired: r.is_expired,
      labels: r.approval_labels ?? {},
      pool: poolOf(r),
    });
  }
  return state;
}
