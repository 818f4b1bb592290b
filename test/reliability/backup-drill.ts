import { expect } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import type { NodeKeyAndCsr } from '../../agent/keys';
import { postToGateway, type GatewayTarget } from '../../agent/renew/gateway-client';
import { verifyJoinAnswer } from '../../agent/verify-answer';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { bootstrapFirstStart } from '../../server/boot/bootstrap';
import { createDb, type Db } from '../../server/db/client';
import { migrate } from '../../server/db/migrate';
import type { PkiBundle } from '../../server/pki/bundle/bundle';
import { loadPki } from '../../server/pki/bundle/store';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { installPins } from '../../server/pki/pins-summary';
import { issueJoinToken } from '../../server/tokens/issue';
import { spawnGateway, type SpawnedGateway } from '../gateway-process';
import { machineClaims } from '../join-harness';
import { defaultPool, serverTrust, startServerProcess, type ServerProcess } from '../server-process';
import { BASE } from './failover-load';
import { startPgCluster, type PgCluster } from './pg-cluster';

/** The backup drill's first instance, as an operator's first start leaves it, and what its tests need of it. */

export const DATABASE = 'better_compute';

/** A gateway's serving certificate for localhost, issued from `bundle`, as the gateway's files hold it. */
export function gatewayCredentials(bundle: PkiBundle) {
  const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
  return { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem };
}

export interface ServingInstance {
  cluster: PgCluster;
  db: Db;
  server: ServerProcess;
  gateway: SpawnedGateway;
  /** The gateway's serving certificate, key and node CA. */
  credentials: ReturnType<typeof gatewayCredentials>;
  trust: JoinTrust;
  target: GatewayTarget;
  tenantId: string;
  pool: Awaited<ReturnType<typeof defaultPool>>;
  /** A viewer's API key of the root tenant. */
  apiKey: string;
}

/**
 * A new PostgreSQL 15 cluster with the product's database (migrated, first start done under `secret`), an API
 * instance and a gateway in front of it.
 */
export async function startServingInstance(secret: string, env: Record<string, string>): Promise<ServingInstance> {
  const cluster = await startPgCluster();
  await cluster.createDatabase(DATABASE);
  await migrate(cluster.urlOf(DATABASE));
  const db = createDb(cluster.urlOf(DATABASE), { max: 4 });
  await bootstrapFirstStart(db, { secret, trustDomain: 'backup.example.com' });
  const server = await startServerProcess({ databaseUrl: cluster.urlOf(DATABASE), secret, env });
  const bundle = await loadPki(db, secret);
  const credentials = gatewayCredentials(bundle);
  const gateway = await spawnGateway({ credentials, apiUrl: server.url });
  const pool = await defaultPool(db);
  return {
    cluster,
    db,
    server,
    gateway,
    credentials,
    trust: await serverTrust(db, secret),
    target: { gatewayUrl: gateway.url, servingCaPin: installPins(bundle).servingCaPin },
    tenantId: pool.ownerTenantId,
    pool,
    apiKey: (await insertApiKey(db, { tenantId: pool.ownerTenantId, role: 'viewer', name: 'drill' }, 'test:backup')).key,
  };
}

/** A PXE machine's discovery join with `token` (bound to `mac`) and `keys`: its verified answer (pending or joined). */
export async function discoveryJoin(target: GatewayTarget, trust: JoinTrust, lease: { token: string; mac: string }, keys: NodeKeyAndCsr) {
  const attempt = await prepareJoinAttempt({
    token: lease.token,
    trust,
    claims: machineClaims({ macs: [lease.mac] }),
    role: 'discovery',
    attestor: 'discovery',
    keys,
  });
  const reply = await postToGateway(target, undefined, `${BASE}/v1/join`, attempt.body, 15_000);
  expect(reply.status, reply.body.toString()).toBe(200);
  return verifyJoinAnswer(JSON.parse(reply.body.toString()), {
    signingKeyPin: trust.signingKeyPin,
    signingCertificateDer: trust.signingCertificateDer,
    csrSha256: keys.csrSha256,
    publicKeySpkiDer: keys.spkiDer,
    expectedRole: 'ramdisk',
  }) as unknown as { status: string; requestId?: string; nodeId?: string; role?: string };
}

/**
 * A token of the default pool's site on `db`: a node token of 1,000 uses (`allowReclaim` if asked), or with
 * `discoveryMac` a discovery token for that MAC, as a site's boot step mints one. Answers the bearer token.
 */
export async function issueToken(db: Db, options: { allowReclaim?: boolean; discoveryMac?: string } = {}): Promise<string> {
  const pool = await defaultPool(db);
  const mac = options.discoveryMac;
  const { token } = await issueJoinToken(db, {
    tenantId: pool.ownerTenantId,
    poolId: mac ? null : pool.id,
    siteId: pool.siteId,
    role: mac ? 'discovery' : 'node',
    ttlSeconds: 3600,
    maxUses: mac ? 1 : 1_000,
    allowReclaim: options.allowReclaim ?? false,
    ...(mac && { boundMac: mac, discovery: { ip: '10.1.2.3', workflowId: 'wf-backup', vouchedBy: 'module:boot', bootLeaseEpoch: 1 } }),
    createdBy: 'test:backup',
  });
  return token!;
}
