import type { Db, Tx } from '../db/client';
import type { DiscoveryBootInfo } from '../join/boot-info';
import { issueJoinToken } from '../tokens/issue';

/** What a module asks for: a single-use token of a machine-facing role, bound to one node or one MAC. */
type ModuleJoinTokenInput = {
  tenantId: string;
  siteId: string;
  /** 60 to 86,400 seconds, as every token. */
  ttlSeconds: number;
  /** Who mints it, as audit rows name callers (`operator:op_…`, `api-key:ak_…`, `module:…`). */
  createdBy: string;
  idempotencyKey?: string | null;
} & ({ role: 'provisioned'; poolId: string; nodeId: string } | { role: 'discovery'; mac: string; discovery?: DiscoveryBootInfo | null });

/**
 * The PKI surface other server modules call to mint machine tokens (joining.md's `ctx.pki.issueJoinToken`):
 * `provisioned` tokens bound to one node and `discovery` tokens bound to one MAC, both single use. It decides
 * no permission: the module calling it has decided its caller already. Built where services are built and
 * handed on through the context (`ctx.pki`).
 */
export interface PkiSurface {
  /**
   * Mints the token through issueJoinToken (event and audit row in the same transaction): in `tx` when given,
   * else in a transaction of its own. The bearer token is in the answer only when this call minted it.
   */
  issueJoinToken(input: ModuleJoinTokenInput, tx?: Tx): ReturnType<typeof issueJoinToken>;
}

export function createPkiSurface(db: Db): PkiSurface {
  return {
    issueJoinToken(input, tx) {
      const common = {
        tenantId: input.tenantId,
        siteId: input.siteId,
        ttlSeconds: input.ttlSeconds,
        maxUses: 1,
        createdBy: input.createdBy,
        idempotencyKey: input.idempotencyKey ?? null,
      };
      const mint = (t: Tx) =>
        input.role === 'provisioned'
          ? issueJoinToken(t, { ...common, role: 'provisioned', poolId: input.poolId, nodeId: input.nodeId })
          : issueJoinToken(t, { ...common, role: 'discovery', poolId: null, boundMac: input.mac, discovery: input.discovery ?? null });
      return tx ? mint(tx) : db.$transaction(mint);
    },
  };
}
