import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { spkiPin } from '../../protocol/pins';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { bootstrapFirstStart } from '../../server/boot/bootstrap';
import { loadPki } from '../../server/pki/bundle/store';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import type { PkiKeyKind } from '../../server/pki/rotation/kinds';
import type { RotationStatus } from '../../server/pki/rotation/rotation';
import { issueJoinToken } from '../../server/tokens/issue';
import type { BcdBuild } from '../bcd-build';
import { reservePort, spawnGateway, type SpawnedGateway } from '../gateway-process';
import {
  createServerDatabase,
  defaultPool,
  newServerSecret,
  startServerProcess,
  type ServerDatabase,
  type ServerProcess,
} from '../server-process';

export const BASE = '/api/compute';

/** One PostgreSQL, `apiCount` API processes and as many gateway processes (gateway i relays to API i). */
export interface RotationDeployment {
  secret: string;
  trustDomain: string;
  database: ServerDatabase;
  apis: ServerProcess[];
  gateways: SpawnedGateway[];
  /** The root tenant's default pool (where every node of these tests lands). */
  pool: { id: string; ownerTenantId: string; siteId: string };
  /** An API key of a root admin: the caller of every rotation step. */
  rootAdminKey: string;
  /** An API key of an operator of the root tenant: a caller every step refuses. */
  operatorKey: string;
  stop(): Promise<void>;
}

/**
 * Starts what a rotation is tried on: a database bootstrapped as the first start does it (root tenant, default
 * site and pool, PKI), `apiCount` production server processes (test/server-main.ts) each naming its own gateway in
 * the well-known document, and that many gateway processes (server/gateway/main.ts) with a serving certificate
 * issued from the stored PKI, each relaying to its API. `env` adds to every server's environment (a short
 * BETTER_COMPUTE_CERT_TTL_SECONDS, the downloads directory of a bcd build). Everything started is stopped again
 * when a later step fails.
 */
export async function startRotationDeployment(options: {
  label: string;
  apiCount?: number;
  env?: Record<string, string>;
  bcd?: BcdBuild;
}): Promise<RotationDeployment> {
  const count = options.apiCount ?? 2;
  const secret = newServerSecret();
  const trustDomain = `${options.label.replace(/_/g, '-')}.example.com`;
  const database = await createServerDatabase(options.label);
  const apis: ServerProcess[] = [];
  const gateways: SpawnedGateway[] = [];
  const stop = async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await Promise.all(apis.map((a) => a.stop()));
    await database.close();
  };
  try {
    const first = await bootstrapFirstStart(database.db, { secret, trustDomain });
    const ports = await Promise.all(Array.from({ length: count }, () => reservePort()));
    const started = await Promise.all(
      ports.map((port) =>
        startServerProcess({
          databaseUrl: database.url,
          secret,
          env: {
            BETTER_COMPUTE_GATEWAY_URL: `https://127.0.0.1:${port}`,
            ...(options.bcd ? { BETTER_COMPUTE_DOWNLOADS_DIR: options.bcd.dir } : {}),
            ...options.env,
          },
        }),
      ),
    );
    apis.push(...started);
    const bundle = await loadPki(database.db, secret);
    const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
    const credentials = { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem };
    gateways.push(...(await Promise.all(ports.map((port, i) => spawnGateway({ credentials, apiUrl: apis[i]!.url, port })))));
    const pool = await defaultPool(database.db);
    const key = (role: 'admin' | 'operator') =>
      insertApiKey(database.db, { tenantId: first.rootTenantId, role, name: `rotation-${role}` }, 'test:rotation').then((k) => k.key);
    return {
      secret,
      trustDomain,
      database,
      apis,
      gateways,
      pool,
      rootAdminKey: await key('admin'),
      operatorKey: await key('operator'),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export type RotationStepName = 'prepare' | 'activate' | 'retire';

/**
 * One rotation step through the REST API (`POST /v1/pki/rotation/{kind}/{step}`) of API instance `api`, as a root
 * admin unless `apiKey` says who: the status and the parsed answer.
 */
export async function rotationStep(
  d: RotationDeployment,
  kind: PkiKeyKind,
  step: RotationStepName,
  options: { api?: number; apiKey?: string; force?: boolean; reason?: string } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = step === 'retire' && options.force ? { force: true, reason: options.reason } : {};
  const answer = await fetch(`${d.apis[options.api ?? 0]!.url}${BASE}/v1/pki/rotation/${kind}/${step}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.apiKey ?? d.rootAdminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  return { status: answer.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A rotation step that must succeed: its trust version. */
export async function rotate(d: RotationDeployment, kind: PkiKeyKind, step: RotationStepName, api = 0): Promise<number> {
  const answer = await rotationStep(d, kind, step, { api });
  if (answer.status !== 200) throw new Error(`${kind} ${step} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { trustVersion: number }).trustVersion;
}

/** `GET /v1/pki/rotation` as a root admin. */
export async function rotationStatusOf(d: RotationDeployment, api = 0): Promise<RotationStatus> {
  const answer = await fetch(`${d.apis[api]!.url}${BASE}/v1/pki/rotation`, { headers: { authorization: `Bearer ${d.rootAdminKey}` } });
  if (answer.status !== 200) throw new Error(`GET /v1/pki/rotation answered ${answer.status}: ${await answer.text()}`);
  return (await answer.json()) as RotationStatus;
}

interface JoinKeys {
  encryptionJwk: { kty: string; crv: string; x: string; y: string };
  encryptionKeyPin: string;
  signingCertificate: string;
  signingKeyPin: string;
}

/** The well-known document (protocol.md "The well-known document") as the fields these tests read. */
interface WellKnownDocument {
  join: JoinKeys & { next?: JoinKeys };
  gateway: { url: string; serverName: string; servingCaPin: string; servingCaPins?: string[] };
}

/** The well-known document of the API at `url`. */
export async function wellKnownOf(url: string): Promise<WellKnownDocument> {
  const answer = await fetch(`${url}${BASE}/.well-known/better-compute`);
  if (answer.status !== 200) throw new Error(`the well-known document answered ${answer.status}`);
  return (await answer.json()) as WellKnownDocument;
}

/** The pin of the serving CA a gateway presents after its leaf now (a TLS handshake that trusts nothing). */
export function servedCaPin(gateway: SpawnedGateway): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: gateway.port, servername: 'localhost', rejectUnauthorized: false }, () => {
      const leaf = socket.getPeerX509Certificate();
      const ca = leaf?.issuerCertificate;
      socket.destroy();
      if (!leaf || !ca || ca.raw.equals(leaf.raw)) return reject(new Error('the gateway presented no serving CA after its leaf'));
      resolve(spkiPin(ca.publicKey));
    });
    socket.once('error', reject);
  });
}

/** How many certificates the gateway sends (the leaf and the CAs after it, as a TLS client chains them). */
export function servedChainLength(gateway: SpawnedGateway): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: gateway.port, servername: 'localhost', rejectUnauthorized: false }, () => {
      let count = 0;
      for (
        let cert = socket.getPeerX509Certificate(), seen: Buffer[] = [];
        cert && !seen.some((s) => s.equals(cert!.raw));
        cert = cert.issuerCertificate
      ) {
        seen.push(cert.raw);
        count += 1;
      }
      socket.destroy();
      resolve(count);
    });
    socket.once('error', reject);
  });
}

/** The pin of a b64 DER certificate's key. */
export const certificatePin = (b64Der: string) => spkiPin(new X509Certificate(Buffer.from(b64Der, 'base64')).publicKey);

/** A join token of the default pool with `maxUses` uses; `allowReclaim` for a machine that joins again. */
export async function newJoinToken(d: RotationDeployment, maxUses = 1, options: { allowReclaim?: boolean } = {}): Promise<string> {
  const { token } = await issueJoinToken(d.database.db, {
    tenantId: d.pool.ownerTenantId,
    poolId: d.pool.id,
    siteId: d.pool.siteId,
    role: 'node',
    ttlSeconds: 3600,
    maxUses,
    allowReclaim: options.allowReclaim,
    createdBy: 'test:rotation',
  });
  return token!;
}

/** The current trust version of the deployment (pki_bundles.trust_version). */
export async function storedTrustVersion(d: RotationDeployment): Promise<number> {
  const rows = await d.database.db.$queryRawUnsafe<Array<{ v: number }>>('SELECT trust_version AS v FROM pki_bundles LIMIT 1');
  return Number(rows[0]!.v);
}

/** nodes.trust_version of each node in `nodeIds` (null: never reported). */
export async function reportedTrustVersions(d: RotationDeployment, nodeIds: string[]): Promise<Map<string, number | null>> {
  const rows = await d.database.db.$queryRawUnsafe<Array<{ id: string; v: number | null }>>(
    'SELECT id, trust_version AS v FROM nodes WHERE id = ANY($1::text[])',
    nodeIds,
  );
  return new Map(rows.map((r) => [r.id, r.v === null ? null : Number(r.v)]));
}

/**
 * Waits until `check` answers true (polling every `intervalMs`), for hooks where expect.poll is not available.
 *
 * @throws Error naming `what` when it did not within `timeoutMs`.
 */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number, intervalMs = 500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
