import { z } from 'zod';
import type { Tx } from '../db/client';
import { typed } from '../db/typed';
import { insertToken } from './insert-token';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { publishEvent, writeAudit } from '../events/publish';
import { normalizeExpect, type JoinExpect, type JoinExpectInput } from '../../protocol/api/join-expect';
import { isPermanentGlobalMac, normalizeMac } from '../../protocol/hardware-claims';
import type { DiscoveryBootInfo } from '../join/boot-info';
import { joinTokenRecords, selectJoinToken, toJoinTokenRecord, type StoredJoinToken } from './records';
import {
  HOSTED_KINDS,
  idempotencyKey,
  JOIN_TOKEN_ROLES,
  maxUses,
  parseInput,
  tokenDescription,
  tokenName,
  ttlSeconds,
  type JoinTokenRecord,
  type JoinTokenRole,
} from '../../protocol/api/token-schemas';
import { formatJoinToken, hashTokenSecret, newTokenSecret } from './secret';
import { formatLabelList, labelsSchema } from '../../protocol/api/labels';

interface IssueJoinTokenInput {
  tenantId: string;
  /** The pool the token admits into; null for tokens scoped to a site alone (`site` role). */
  poolId: string | null;
  siteId: string;
  role: JoinTokenRole;
  /** 60 to 86,400; the expiry is computed by the database clock, `compute_now() + ttlSeconds`. */
  ttlSeconds: number;
  /** 1 to 10,000. */
  maxUses: number;
  /** Normalized here with `normalizeExpect`; null or absent for an unpinned token. */
  expect?: JoinExpectInput | null;
  allowReclaim?: boolean;
  hosted?: (typeof HOSTED_KINDS)[number] | null;
  /** For `discovery` tokens: the one MAC that may present it. */
  boundMac?: string | null;
  /**
   * For `provisioned` tokens, and only them (required there): the one node the token admits. It must be a
   * live node of `tenantId` in `siteId`; the join reclaims it.
   */
  nodeId?: string | null;
  /** For `discovery` tokens: what the boot step saw besides the MAC; copied onto the machine's join request. */
  discovery?: DiscoveryBootInfo | null;
  /** Who mints it, as audit rows name callers (`operator:op_…`, `api-key:ak_…`, `module:…`). */
  createdBy: string;
  /** Scoped to (tenantId, createdBy). Absent: every call mints a new token. */
  idempotencyKey?: string | null;
  /** An operator's label and notes for the token; shown, never compared for idempotency. */
  name?: string | null;
  description?: string | null;
  /** Labels the nodes it admits get (labelsSchema); none when absent. */
  labels?: Record<string, string>;
}

interface IssuedJoinToken {
  record: JoinTokenRecord;
  /** The bearer `bcjt_<id>.<secret>`; present only when this call minted the token, never on a replay. */
  token?: string;
}

const issueInput = z.object({
  tenantId: z.string().min(1),
  poolId: z.string().min(1).nullable(),
  siteId: z.string().min(1),
  role: z.enum(JOIN_TOKEN_ROLES),
  ttlSeconds,
  maxUses,
  allowReclaim: z.boolean().default(false),
  hosted: z.enum(HOSTED_KINDS).nullish(),
  boundMac: z.string().nullish(),
  nodeId: z.string().min(1).max(100).nullish(),
  createdBy: z.string().min(1).max(200),
  idempotencyKey: idempotencyKey.nullish(),
  name: tokenName.nullish(),
  description: tokenDescription.nullish(),
  labels: labelsSchema.default({}),
});

/** The refusal of a bound MAC that is not a permanent, globally administered unicast MAC, on `field`. */
export const invalidMac = (field: string) =>
  new DomainError(
    'INVALID_ARGUMENT',
    `${field}: must be a permanent, globally administered unicast MAC (aa:bb:cc:dd:ee:ff), not broadcast, multicast, locally administered or all zero`,
    { field },
  );

/**
 * Mints a join token of any role inside the caller's transaction: the one server-side minting function
 * (joining.md's `ctx.pki.issueJoinToken`), used by `joinTokens.create` and by later modules for `site`,
 * `provisioned` and `discovery` tokens. It validates the bounds, normalizes `expect`, stores only the
 * SHA-256 of a new 256-bit secret, and in the same transaction publishes `security.join-token.created`
 * and writes the `join-token.created` audit row.
 *
 * With an idempotency key already used by the same (tenant, createdBy), nothing is minted: the existing
 * record comes back without `token`, or CONFLICT when the new call asks for a different token (pool, site,
 * role, expect, allowReclaim, hosted, maxUses, boundMac or nodeId). A different ttlSeconds is not a conflict: a
 * client that computes its TTL from the clock sends a different one on every retry, and the original
 * expiry stands. The insert is `ON CONFLICT DO NOTHING`, so concurrent calls with one key mint one token
 * without aborting the caller's transaction.
 */
export async function issueJoinToken(tx: Tx, input: IssueJoinTokenInput): Promise<IssuedJoinToken> {
  const valid = parseInput(issueInput, input);
  const expect = normalizeExpect(input.expect);
  const boundMac = valid.boundMac == null ? null : normalizeMac(valid.boundMac);
  // protocol.md: claims list only permanent, globally administered MACs, so a token bound to any other
  // (broadcast, multicast, locally administered, all zero) could never match the machine it names.
  if (valid.boundMac != null && !isPermanentGlobalMac(boundMac)) throw invalidMac('boundMac');
  const nodeId = valid.nodeId ?? null;
  await checkBoundNode(tx, valid, nodeId);
  const wanted = { ...valid, expect, boundMac, nodeId, hosted: valid.hosted ?? null, idempotencyKey: valid.idempotencyKey ?? null };

  const id = newId('jt');
  const secret = newTokenSecret();
  const inserted = await insertToken(tx, id, hashTokenSecret(secret), wanted, input.discovery ?? null);
  if (!inserted) {
    const existing = await joinTokenRecords(tx)
      .where('tenant_id', '=', wanted.tenantId)
      .where('created_by', '=', wanted.createdBy)
      .where('idempotency_key', '=', wanted.idempotencyKey)
      .executeTakeFirst();
    if (!existing) throw new Error(`Join token insert for an idempotency key found no row (tenant ${wanted.tenantId})`);
    refuseDifferentReplay(existing, wanted);
    return { record: toJoinTokenRecord(existing) };
  }

  const row = (await selectJoinToken(tx, id))!;
  const record = toJoinTokenRecord(row);
  const summary = {
    tokenId: id,
    poolId: record.poolId,
    siteId: record.siteId,
    role: record.role,
    maxUses: record.maxUses,
    expiresAt: record.expiresAt,
    pinned: expect !== null,
    ...(Object.keys(record.labels).length ? { labels: record.labels } : {}),
    ...(record.hosted ? { hosted: record.hosted } : {}),
    ...(nodeId ? { nodeId } : {}),
    // Who did it, so the events page can say so without the audit log.
    actor: wanted.createdBy,
  };
  await publishEvent(tx, { tenantId: wanted.tenantId, type: 'security.join-token.created', data: summary });
  await writeAudit(tx, {
    tenantId: wanted.tenantId,
    actor: wanted.createdBy,
    action: 'join-token.created',
    resource: `compute-join-token/${id}`,
    data: { ...summary, allowReclaim: record.allowReclaim, ...(wanted.idempotencyKey ? { idempotencyKey: wanted.idempotencyKey } : {}) },
  });
  return { record, token: formatJoinToken(id, secret) };
}

export type Wanted = z.output<typeof issueInput> & {
  expect: JoinExpect | null;
  boundMac: string | null;
  nodeId: string | null;
  hosted: string | null;
  idempotencyKey: string | null;
};

/**
 * A `provisioned` token must name a node, and only it may: a live (not retired) node of the token's tenant
 * and site. NOT_FOUND for a node the tenant does not have, so another tenant's ids stay unknown.
 */
async function checkBoundNode(tx: Tx, valid: z.output<typeof issueInput>, nodeId: string | null) {
  if (valid.role !== 'provisioned') {
    if (nodeId !== null) throw new DomainError('INVALID_ARGUMENT', 'nodeId: only a provisioned token names a node', { field: 'nodeId' });
    return;
  }
  if (nodeId === null) throw new DomainError('INVALID_ARGUMENT', 'nodeId: a provisioned token must name its node', { field: 'nodeId' });
  const node = await typed(tx)
    .selectFrom('nodes')
    .select(['site_id', 'state'])
    .where('id', '=', nodeId)
    .where('tenant_id', '=', valid.tenantId)
    .executeTakeFirst();
  if (!node) throw new DomainError('NOT_FOUND', `node ${nodeId} not found`, { field: 'nodeId' });
  if (node.state === 'retired') throw new DomainError('INVALID_STATE', `node ${nodeId} is retired`, { field: 'nodeId' });
  if (node.site_id !== valid.siteId) {
    throw new DomainError('INVALID_ARGUMENT', `nodeId: node ${nodeId} is in another site than the token`, { field: 'nodeId' });
  }
}

/** CONFLICT when a replayed key asks for a different token; the field is the first that differs. */
function refuseDifferentReplay(existing: StoredJoinToken, t: Wanted) {
  const differs: [field: string, same: boolean][] = [
    ['poolId', existing.pool_id === t.poolId],
    ['siteId', existing.site_id === t.siteId],
    ['role', existing.role === t.role],
    ['expect', sameExpect(existing.expect, t.expect)],
    ['allowReclaim', existing.allow_reclaim === t.allowReclaim],
    ['hosted', (existing.hosted ?? null) === t.hosted],
    ['maxUses', existing.max_uses === t.maxUses],
    ['boundMac', (existing.bound_mac ?? null) === t.boundMac],
    ['nodeId', (existing.node_id ?? null) === t.nodeId],
    ['labels', formatLabelList(existing.labels ?? {}) === formatLabelList(t.labels)],
  ];
  const field = differs.find(([, same]) => !same)?.[0];
  if (field) {
    throw new DomainError(
      'CONFLICT',
      `idempotencyKey was already used for join token ${existing.id} with a different ${field}; use a new key for a different token`,
      { field },
    );
  }
}

const EXPECT_FIELDS = ['productUuid', 'serial', 'mac', 'gpuUuid'] as const;
function sameExpect(stored: Record<string, string> | null, wanted: JoinExpect | null): boolean {
  if (stored === null || wanted === null) return stored === wanted;
  return EXPECT_FIELDS.every((f) => (stored[f] ?? null) === (wanted[f] ?? null));
}
