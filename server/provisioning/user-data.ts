import type { Db } from '../db/client';
import { DomainError } from '../../protocol/errors';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { BASE_PATH, PRODUCT_VERSION } from '../config/config';
import { currentInstallPins, readBuiltDigests } from '../daemon/generate';
import { writeAudit } from '../events/publish';
import { loadPool } from '../pools/pools';
import type { UserDataInput, UserDataOutput } from '../../protocol/api/provisioning-schemas';
import { renderCloudConfig } from './cloud-config';
import type { PkiSurface } from './pki-surface';

const ACTION = 'compute:join-tokens:create' as const;

/**
 * `provisioning.userData`: mints a single-use `provisioned` token bound to `nodeId` (through `pki`, the PKI
 * surface) and answers cloud-init user data that joins the deployed machine back as that node. Decided as
 * `compute:join-tokens:create` on the node and on the pool it joins into (the node's own unless `poolId`);
 * another tenant's or an unknown node is NOT_FOUND. The token is minted and the `provisioning.user-data`
 * audit row written in one transaction; the token appears only inside `userData`.
 *
 * @throws DomainError NOT_FOUND, ACCESS_DENIED, INVALID_STATE (retired node, archived pool or one without the
 *   daemon), INVALID_ARGUMENT (a pool of another site, no pool, no bcd digest), INVALID_CONFIG (no PKI).
 */
export async function provisioningUserData(
  db: Db,
  pki: PkiSurface,
  principal: Principal,
  input: UserDataInput,
  downloadsDir: string,
): Promise<UserDataOutput> {
  const owner = await authorize(db, principal, ACTION, resource.node(input.nodeId));
  const node = owner === input.tenantId ? await db.node.findUnique({ where: { id: input.nodeId } }) : null;
  if (!node) throw new DomainError('NOT_FOUND', `Node ${input.nodeId} not found`);
  if (node.state === 'retired')
    throw new DomainError('INVALID_STATE', `Node ${node.id} is retired: it never joins again`, { field: 'nodeId' });
  const poolId = input.poolId ?? node.poolId;
  if (!poolId) throw new DomainError('INVALID_ARGUMENT', `Node ${node.id} has no pool: name one (poolId)`, { field: 'poolId' });
  const pool = await loadPool(db, principal, ACTION, { tenantId: input.tenantId, poolId });
  if (pool.archivedAt) throw new DomainError('INVALID_STATE', `Pool ${pool.id} is archived: no machine can join it`, { field: 'poolId' });
  if (pool.agent !== 'bcd')
    throw new DomainError('INVALID_STATE', `Pool ${pool.id} runs no daemon (agent '${pool.agent}')`, { field: 'poolId' });
  if (pool.siteId !== node.siteId) {
    throw new DomainError('INVALID_ARGUMENT', `Pool ${pool.id} is in site ${pool.siteId}, not the node's site ${node.siteId}`, {
      field: 'poolId',
    });
  }
  const pins = await currentInstallPins(db);
  const sha256 = input.sha256 ?? (await readBuiltDigests(downloadsDir, PRODUCT_VERSION));
  if (!sha256.amd64 && !sha256.arm64) {
    throw new DomainError(
      'INVALID_ARGUMENT',
      `No digest for bcd ${PRODUCT_VERSION}: pass sha256, or build it on this server (npm run build:bcd)`,
      {
        field: 'sha256',
      },
    );
  }
  const { record, token } = await db.$transaction(async (tx) => {
    const issued = await pki.issueJoinToken(
      {
        role: 'provisioned',
        tenantId: node.tenantId,
        siteId: node.siteId,
        poolId: pool.id,
        nodeId: node.id,
        ttlSeconds: input.ttlSeconds,
        createdBy: principal.actor,
      },
      tx,
    );
    await writeAudit(tx, {
      tenantId: node.tenantId,
      actor: principal.actor,
      action: 'provisioning.user-data',
      resource: resource.node(node.id),
      data: { nodeId: node.id, poolId: pool.id, tokenId: issued.record.id, expiresAt: issued.record.expiresAt },
    });
    return issued;
  });
  const userData = renderCloudConfig({
    nodeId: node.id,
    poolId: pool.id,
    token: token!,
    serverUrl: input.serverUrl,
    basePath: BASE_PATH,
    pins,
    bcdVersion: PRODUCT_VERSION,
    sha256,
    generatedBy: `better-compute ${PRODUCT_VERSION}`,
  });
  return { nodeId: node.id, poolId: pool.id, tokenId: record.id, expiresAt: record.expiresAt, userData };
}
