import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Db } from '../db/client';
import { JOIN_FAILED, joinNotConfigured, type JoinAnswer } from '../../protocol/join-wire';
import { isPermanentGlobalMac, normalizeMac } from '../../protocol/hardware-claims';
import {
  parseSiteMintRequest,
  parseSiteRedeemRequest,
  SITE_AGENT_REFUSED,
  type SiteMintAnswer,
  type SiteMintRequest,
  type SiteRedeemAnswer,
} from '../../protocol/site-agent-wire';
import { logError } from '../log';
import type { PkiRuntime } from '../join/join-runtime';
import { trustStateOf } from '../pki/rotation/trust-state';
import { SELECT_PRESENTED_LEAVES } from '../renew/renew-sql';
import type { LeafRow } from '../renew/renew-write';
import { vouchedPeer } from '../vouching/vouch';
import type { SharedRateLimit } from '../http/shared-rate-limit';
import { REFUSAL_EVENT_LIMIT, REFUSAL_EVENT_WINDOW } from '../join/refusals';
import { issueJoinToken } from '../tokens/issue';
import { publishEvent, writeAudit } from '../events/publish';
import { openSecretRef, sealSecretRef } from './secret-ref-seal';
import {
  countLiveDiscovery,
  insertRef,
  liveRef,
  lockSite,
  lockTenantMac,
  macElsewhere,
  RECORD_REFUSAL,
  REDEEM_REF,
  supersedeRef,
} from './site-agent-sql';

/** How long a discovery token a site agent minted lives: a ramdisk boots and joins within minutes. */
const SITE_DISCOVERY_TOKEN_TTL_SECONDS = 3600;

/** A call the gateway relayed: the body and the gateway's vouching for the peer certificate. */
interface SiteAgentCall {
  body: Buffer | null;
  vouch: string | undefined;
  peer: string | undefined;
  path: string;
}

interface SiteAgentServiceOptions {
  db: Db;
  pool: pg.Pool;
  loadRuntime: () => Promise<PkiRuntime | null>;
  loadRootTenantId: () => Promise<string | null>;
  /** BETTER_COMPUTE_SECRET, then BETTER_COMPUTE_PREVIOUS_SECRET: the token's seal. */
  serverSecrets: () => string[];
  /** Mint and redeem calls per site agent (its node id), shared by every instance through `rate_limits`. */
  limit: SharedRateLimit;
  /** The refusal events' own rate limit (60 per reason and tenant a minute); tests isolate with their key prefix. */
  refusalLimit?: { limit: number; window: string; keyPrefix: string };
}

class Refused extends Error {
  constructor(
    readonly reason: string,
    readonly row: LeafRow | null,
    readonly tokenId: string | null = null,
  ) {
    super(reason);
  }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();
const answer = (value: SiteMintAnswer | SiteRedeemAnswer): JoinAnswer => ({ status: 200, body: Buffer.from(JSON.stringify(value)) });
const newSecretRef = () => `sref_${randomBytes(24).toString('base64url')}`;

/**
 * The site agent's two calls (docs/site-agent-wire.md). Each is believed only for a live `site` certificate the
 * gateway vouched for, checked at every call as a renewal checks its leaf (a revoked certificate or a retired
 * node loses the ability at once), then rate limited per site agent. Every refusal is {@link SITE_AGENT_REFUSED}
 * and a `security.site-agent.refused` event with the reason; the token appears only in a redeem's answer, never
 * in an event, an audit row, a log line or an error (its id does).
 */
export class SiteAgentService {
  constructor(private readonly options: SiteAgentServiceOptions) {}

  /** `POST /v1/site/discovery-tokens`: a discovery token bound to the lease's MAC, as a secret reference. */
  mint(call: SiteAgentCall): Promise<JoinAnswer> {
    return this.guarded(call, async (row, body) => {
      const lease = parseSiteMintRequest(body);
      if (!lease) throw new Refused('malformed', row);
      if (!isPermanentGlobalMac(lease.mac)) throw new Refused('mac', row);
      return answer(await this.mintFor(row, lease));
    });
  }

  /** `POST /v1/site/discovery-tokens/redeem`: the bearer token of a reference this agent minted, once. */
  redeem(call: SiteAgentCall): Promise<JoinAnswer> {
    return this.guarded(call, async (row, body) => {
      const ref = parseSiteRedeemRequest(body);
      if (!ref) throw new Refused('malformed', row);
      const found = (await this.options.pool.query<{ token_id: string; sealed: Buffer }>(REDEEM_REF, [ref, row.node_id])).rows[0];
      if (!found) throw new Refused('ref-unknown-or-redeemed', row);
      const token = openSecretRef(found.sealed, ref, this.options.serverSecrets());
      if (token === null) throw new Refused('ref-unsealable', row, found.token_id);
      return answer({ tokenId: found.token_id, token });
    });
  }

  /** The checks both calls share, in order: keys, vouching, the leaf's standing and role, the rate. */
  private async guarded(call: SiteAgentCall, handle: (row: LeafRow, body: string) => Promise<JoinAnswer>): Promise<JoinAnswer> {
    try {
      const runtime = await this.options.loadRuntime();
      if (!runtime) return joinNotConfigured('JoinService has no keys configured');
      const body = call.body;
      if (!body) throw new Refused('oversized', null);
      const peer = vouchedPeer({ vouch: call.vouch, peer: call.peer }, body, call.path, trustStateOf(runtime).servingCaPins);
      if (peer === 'no-peer') throw new Refused('no-client-certificate', null);
      if (!peer) throw new Refused('unvouched', null);
      const found = await this.options.pool.query<LeafRow>({
        name: 'site-agent-presented-leaf',
        text: SELECT_PRESENTED_LEAVES,
        values: [[sha256(peer)], [peer]],
      });
      const row = found.rows[0];
      if (!row) throw new Refused('certificate-unknown', null);
      if (row.is_revoked) throw new Refused('revoked', row);
      if (row.is_expired) throw new Refused('expired', row);
      if (row.cert_generation !== row.node_generation) throw new Refused('generation', row);
      if (row.state === 'retired') throw new Refused('node-retired', row);
      if (row.role !== 'site') throw new Refused('role', row);
      if (!(await this.options.limit.hit(row.node_id)).allowed) throw new Refused('rate-limited', row);
      return await handle(row, body.toString('utf8'));
    } catch (error) {
      if (error instanceof Refused) {
        await this.recordRefusal(error);
        return SITE_AGENT_REFUSED;
      }
      logError('site agent request failed', error);
      return JOIN_FAILED;
    }
  }

  /**
   * One transaction after the site's row lock and the tenant's lock on the MAC. A lease of a MAC with a live reference: the same boot lease epoch
   * is a retry and gets the same reference (refused once its token was used or ended: one token per lease); a
   * newer epoch supersedes it (its token revoked unless a machine already joined with it); an older one is
   * refused. A MAC of a node or a live reference of another site of the tenant is refused, and so is a mint past the site's cap.
   */
  private async mintFor(row: LeafRow, lease: SiteMintRequest): Promise<SiteMintAnswer> {
    const mac = normalizeMac(lease.mac)!;
    const actor = `node:${row.node_id}`;
    const secret = this.options.serverSecrets()[0];
    if (!secret) throw new Error('BETTER_COMPUTE_SECRET is not set: a discovery token cannot be sealed');
    return this.options.db.$transaction(async (tx) => {
      const site = await lockSite(tx, row.site_id);
      if (!site || site.is_archived) throw new Refused('site-archived', row);
      await lockTenantMac(tx, site.owner_tenant_id, mac);
      if (await macElsewhere(tx, row.site_id, mac, site.owner_tenant_id)) throw new Refused('mac-other-site', row);
      const live = await liveRef(tx, row.site_id, mac);
      if (live) {
        const epoch = BigInt(live.epoch);
        const asked = BigInt(lease.bootLeaseEpoch);
        if (asked < epoch) throw new Refused('stale-lease', row, live.token_id);
        if (asked === epoch) {
          if (!live.token_live) throw new Refused('lease-used', row, live.token_id);
          return { ref: live.id, tokenId: live.token_id, expiresAt: live.expires_at.toISOString() };
        }
        const revoked = await supersedeRef(tx, live.id, actor);
        // As joinTokens.revoke records it: the event and the audit row name the token's id, never the token.
        for (const { id } of revoked) {
          const data = { tokenId: id, poolId: null, siteId: row.site_id, role: 'discovery', actor, reason: 'newer-lease' };
          await publishEvent(tx, { tenantId: site.owner_tenant_id, type: 'security.join-token.revoked', data });
          await writeAudit(tx, {
            tenantId: site.owner_tenant_id,
            actor,
            action: 'join-token.revoked',
            resource: `compute-join-token/${id}`,
            data,
          });
        }
      }
      if ((await countLiveDiscovery(tx, row.site_id)) >= site.cap) throw new Refused('cap', row);
      const { record, token } = await issueJoinToken(tx, {
        tenantId: site.owner_tenant_id,
        poolId: null,
        siteId: row.site_id,
        role: 'discovery',
        ttlSeconds: SITE_DISCOVERY_TOKEN_TTL_SECONDS,
        maxUses: 1,
        boundMac: mac,
        discovery: { ip: lease.ip ?? null, workflowId: null, vouchedBy: actor, bootLeaseEpoch: lease.bootLeaseEpoch },
        createdBy: actor,
      });
      const ref = newSecretRef();
      await insertRef(tx, {
        id: ref,
        tokenId: record.id,
        siteId: row.site_id,
        nodeId: row.node_id,
        mac,
        bootLeaseEpoch: String(lease.bootLeaseEpoch),
        sealed: sealSecretRef(token!, ref, secret),
        expiresAt: record.expiresAt,
      });
      return { ref, tokenId: record.id, expiresAt: record.expiresAt };
    });
  }

  private async recordRefusal(refused: Refused) {
    try {
      const tenantId = refused.row?.tenant_id ?? (await this.options.loadRootTenantId());
      if (!tenantId) return;
      const rate = this.options.refusalLimit ?? {
        limit: REFUSAL_EVENT_LIMIT,
        window: REFUSAL_EVENT_WINDOW,
        keyPrefix: 'site-agent-refused',
      };
      const data = {
        reason: refused.reason,
        nodeId: refused.row?.node_id ?? null,
        serial: refused.row?.serial ?? null,
        siteId: refused.row?.site_id ?? null,
        tokenId: refused.tokenId,
      };
      await this.options.pool.query(RECORD_REFUSAL, [
        tenantId,
        `${rate.keyPrefix}:${tenantId}:${refused.reason}`,
        JSON.stringify(data),
        rate.limit,
        rate.window,
      ]);
    } catch (error) {
      logError('could not record a site agent refusal', error);
    }
  }
}
