import type pg from 'pg';
import { normalizeSerial, normalizeUuid } from '../../../../protocol/hardware-claims';
import type { PreparedJoin } from '../../prepare';
import type { RuleInForce } from '../../../rules/match';
import type { LockedToken } from '../../decide';
import { lockedPool } from '../../locked-rows';
import { discoverySettings } from '../../../../protocol/api/discovery-settings';
import { WRITE_RULE_DECISIONS_SQL, type PoolColumns } from '../../../requests/request-store-sql';

// What the discovery attestor decides without a person (approval rules, expected machines), apart from the
// attestor's own flow in discovery.ts.

/** An approval rule as the batch loaded it, with the pool an approving rule admits into. */
export interface LoadedRule extends RuleInForce {
  poolId: string | null;
  pool: LockedToken['pool'];
  labels: Record<string, string>;
}

/** An expected machine (an import's entry) that a join of the batch may match. */
export interface ExpectedEntry {
  id: string;
  siteId: string;
  importId: string;
  serial: string | null;
  productUuid: string | null;
  mac: string | null;
  poolId: string;
  pool: LockedToken['pool'];
  labels: Record<string, string>;
}

/**
 * A join decided without a person: by a rule (admitted into its pool, `consumed`, or refused, `rejected`) or
 * by an expected machine (admitted into the entry's pool).
 */
export interface RuleDecision {
  join: PreparedJoin;
  token: LockedToken;
  id: string;
  machineKey: string;
  state: 'consumed' | 'rejected';
  ruleId: string | null;
  expectedId: string | null;
  decidedBy: string;
  reason: string;
  poolId: string | null;
}

/** Writes the requests the batch's rules decided (WRITE_RULE_DECISIONS_SQL), in one statement. */
export async function writeRuleDecisions(client: pg.PoolClient, ruled: RuleDecision[], admitted: ReadonlyMap<PreparedJoin, string>) {
  const boot = (d: RuleDecision) => d.token.discovery ?? {};
  await client.query(WRITE_RULE_DECISIONS_SQL, [
    ruled.map((d) => d.id),
    ruled.map((d) => d.token.tenantId),
    ruled.map((d) => d.token.siteId),
    ruled.map((d) => d.machineKey),
    ruled.map((d) => JSON.stringify(d.join.claims)),
    ruled.map((d) => d.join.hardware.key),
    ruled.map((d) => d.join.trustedKey !== null),
    ruled.map((d) => d.token.boundMac),
    ruled.map((d) => boot(d).ip ?? null),
    ruled.map((d) => boot(d).workflowId ?? null),
    ruled.map((d) => boot(d).vouchedBy ?? null),
    ruled.map((d) => boot(d).bootLeaseEpoch ?? null),
    ruled.map((d) => d.join.csr.csrSha256),
    ruled.map((d) => d.token.id),
    ruled.map((d) => discoverySettings(d.token.site.discovery).pendingTtlSeconds),
    ruled.map((d) => d.state),
    ruled.map((d) => d.ruleId),
    ruled.map((d) => d.decidedBy),
    ruled.map((d) => d.reason),
    ruled.map((d) => d.poolId),
    ruled.map((d) => (d.state === 'consumed' ? (admitted.get(d.join) ?? null) : null)),
    ruled.map((d) => d.expectedId),
    ruled.map((d) => d.join.clientAddress ?? null),
  ]);
}

/** A pool row joined to a rule, an entry or a request, as checkPool reads pools. */
export const poolOf = (r: PoolColumns): LockedToken['pool'] => (r.pool_id ? lockedPool(r) : null);

export const serialsOf = (join: PreparedJoin) =>
  [join.claims.productSerial, join.claims.boardSerial, join.claims.chassisSerial]
    .map((s) => normalizeSerial(s))
    .filter((s): s is string => s !== null);

/** Whether a join is the expected machine: its vouched MAC, or (trusted key only) a serial or the product UUID. */
export function matchesEntry(entry: ExpectedEntry, token: LockedToken, join: PreparedJoin): boolean {
  if (entry.mac && entry.mac === token.boundMac) return true;
  if (!join.trustedKey) return false;
  if (entry.serial && serialsOf(join).includes(entry.serial)) return true;
  return entry.productUuid !== null && entry.productUuid === normalizeUuid(join.claims.productUuid);
}
