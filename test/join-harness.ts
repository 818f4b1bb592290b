import { createPrivateKey, randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { prepareJoinAttempt, type JoinTrust } from '../agent/join';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../agent/keys';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { JoinService } from '../server/join/join-service';
import type { JoinPreparer } from '../server/join/prepare';
import { DEFAULT_NEW_REQUEST_LIMITS, type NewRequestLimits } from '../server/join/request-admission';
import { createServices, type Services } from '../server/boot/services';
import { createPkiBundle, type PkiBundle } from '../server/pki/bundle/bundle';
import { installPins } from '../server/pki/pins-summary';
import { sessionSettings, type SessionSettings } from '../server/sessions/settings';
import { joinCryptoFromBundle, type JoinCrypto } from '../server/pki/issuance/join-crypto';
import { ensureRootTenant } from '../server/tenants/tenants';
import { createJoinToken } from '../server/tokens/join-tokens';
import { createTestTenant, type TestTenant } from './fixtures';
import { testDatabaseUrl, testDb } from './db';
import { verifiedJoinAnswer } from './joined-identity';

export interface JoinHarness {
  bundle: PkiBundle;
  crypto: JoinCrypto;
  trust: JoinTrust;
  pool: pg.Pool;
  service: JoinService;
  /** Everything the composition root wires (server/boot/services.ts), on these keys: `service` is its JoinService. */
  services: Services;
  rootTenantId: string;
  keyPrefix: string;
}

/**
 * The services of a server process (server/boot/services.ts) on the test database, with a PKI of their own
 * and refusal rate-limit keys of their own (`limit` joins' refusal events per minute; renewals and sessions
 * 1,000, so their tests never meet the limit). `pool` is the services' pool; ending it ends them.
 */
export async function createJoinHarness(
  options: {
    limit?: number;
    sessions?: SessionSettings;
    requestLimits?: Partial<NewRequestLimits>;
    env?: Record<string, string>;
    /** A PKI source of the test's own on these keys (one that swaps its runtime), instead of a fixed one. */
    pki?: (crypto: JoinCrypto, servingCaPin: string) => Services['pki'];
    /**
     * Refusals that name no node go to a tenant of this harness's own instead of the deployment's root tenant,
     * so a test counting them does not see those of tests running beside it.
     */
    ownRefusalTenant?: boolean;
    /** The per-site-agent request limit (server/sites/site-agent-service.ts), with numbers of the test's own. */
    siteAgentLimit?: { limit: number; windowSeconds: number };
  } = {},
): Promise<JoinHarness> {
  const bundle = createPkiBundle({ trustDomain: 'test.example.com' });
  const crypto = joinCryptoFromBundle(bundle);
  const servingCaPin = installPins(bundle).servingCaPin;
  // The command-signing key, as a server's runtime holds it (pkiRuntimeOf): commands are signed with it.
  const commandSigningKey = createPrivateKey(bundle.commandCa.privateKeyPem);
  const { root, keyPrefix, refusalLimits } = await refusalsOfTest(options.ownRefusalTenant, options.limit);
  const services = createServices({
    databaseUrl: testDatabaseUrl(),
    db: testDb(),
    env: options.env ?? {},
    pgPoolMax: 8,
    pki: options.pki?.(crypto, servingCaPin) ?? {
      load: async () => ({ crypto, servingCaPin, commandSigningKey }),
      loadCrypto: async () => crypto,
    },
    rootTenantId: async () => root.id,
    refusalLimits,
    // Short heartbeats and grace by default, so the tests see them within seconds.
    sessionSettings: options.sessions ?? sessionSettings(1, 2),
    // New-request windows of its own (the defaults otherwise), so other tests' joins never fill them.
    requestLimits: { ...DEFAULT_NEW_REQUEST_LIMITS, keyPrefix: `${keyPrefix}-requests`, ...options.requestLimits },
    siteAgentLimit: { keyPrefix: `${keyPrefix}-site-agent`, ...options.siteAgentLimit },
  });
  const { pg: pool, join: service } = services;
  const trust: JoinTrust = {
    encryptionJwk: crypto.encryptionPublicJwk,
    signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'),
    signingKeyPin: crypto.signingKeyPin,
  };
  return { bundle, crypto, trust, pool, service, services, rootTenantId: root.id, keyPrefix };
}

/**
 * Where a test's services send refusals and how they count them: the tenant of refusals that name no node
 * (the deployment's root tenant, or with `ownTenant` one of the test's own, so a test counting them does not
 * see those of tests beside it) and refusal rate-limit keys of its own (`joinLimit` join refusals a minute;
 * renewals and sessions 1,000, so their tests never meet the limit).
 */
export async function refusalsOfTest(ownTenant = false, joinLimit = 60) {
  const root = ownTenant ? { id: (await createTestTenant(testDb(), { label: 'refusals' })).tenantId } : await ensureRootTenant(testDb());
  const keyPrefix = `test-${randomBytes(4).toString('hex')}`;
  const window = '60 seconds';
  const refusalLimits = {
    join: { limit: joinLimit, window, keyPrefix },
    renew: { limit: 1000, window, keyPrefix: `${keyPrefix}-renew` },
    sessions: { limit: 1000, window, keyPrefix: `${keyPrefix}-session` },
  };
  return { root, keyPrefix, refusalLimits };
}

/**
 * Two JoinService instances on their own pg pools (as two API processes would be), sharing the harness
 * keys and root tenant and one refusal rate-limit key space (the limit lives in the database, shared by
 * every instance). Their batches are separate transactions that only the token row's lock orders.
 */
export function createJoinServicePair(
  h: JoinHarness,
  options: { maxBatch: number; refusalLimit?: number; preparer?: JoinPreparer; requestLimits?: Partial<NewRequestLimits> },
): { services: [JoinService, JoinService]; close: () => Promise<void> } {
  const keyPrefix = `exact-${randomBytes(4).toString('hex')}`;
  const made: Services[] = [];
  const make = () => {
    const services = createServices({
      databaseUrl: testDatabaseUrl(),
      db: testDb(),
      env: {},
      pgPoolMax: 4,
      pki: h.services.pki,
      rootTenantId: async () => h.rootTenantId,
      maxBatch: options.maxBatch,
      refusalLimits: { join: { limit: options.refusalLimit ?? 60, window: '60 seconds', keyPrefix } },
      preparer: options.preparer,
      // One new-request key space for both, as the database shares it between instances.
      requestLimits: { ...DEFAULT_NEW_REQUEST_LIMITS, keyPrefix: `${keyPrefix}-requests`, ...options.requestLimits },
    });
    made.push(services);
    return services.join;
  };
  return { services: [make(), make()], close: async () => void (await Promise.all(made.map((s) => s.pg.end()))) };
}

/**
 * Join request bodies (as the agent sends them) of `n` distinct trusted machines for one token, sealed
 * ahead so the joins can arrive together. `keys[i]`, when given, is machine i's key and CSR: a key that
 * was never certified may be sealed again for another token, which saves most of the client's work.
 */
export async function sealedJoinBodies(h: JoinHarness, token: string, n: number, keys: NodeKeyAndCsr[] = []): Promise<string[]> {
  const attempts = await Promise.all(
    Array.from({ length: n }, (_, i) => prepareJoinAttempt({ token, trust: h.trust, claims: machineClaims(), keys: keys[i] })),
  );
  return attempts.map((a) => a.body);
}

/** Claims of a distinct, trusted machine: a product UUID, a serial and a permanent MAC. */
export function machineClaims(overrides: Partial<HardwareClaims> = {}): HardwareClaims {
  const mac = `3c:ec:ef:${randomBytes(3).toString('hex').match(/../g)!.join(':')}`;
  return {
    productUuid: randomUUID(),
    productSerial: `SN-${randomBytes(4).toString('hex').toUpperCase()}`,
    macs: [mac],
    hostname: 'r7-u12',
    ...overrides,
  };
}

export async function mintToken(t: TestTenant, input: Partial<Parameters<typeof createJoinToken>[2]> = {}) {
  return createJoinToken(testDb(), t.admin, {
    tenantId: t.tenantId,
    poolId: t.pool.id,
    ttlSeconds: 3600,
    maxUses: 1,
    allowReclaim: false,
    idempotencyKey: randomUUID(),
    ...input,
  });
}

/** Joins through JoinService as an agent would (same request body, answer verified in the spec's order). */
export async function agentJoin(
  h: JoinHarness,
  token: string,
  claims: HardwareClaims,
  options: {
    keys?: NodeKeyAndCsr;
    role?: string;
    attestor?: string;
    expectedRole?: string;
    mutate?: (body: Record<string, unknown>) => void;
  } = {},
) {
  const keys = options.keys ?? generateNodeKeyAndCsr();
  const attempt = await prepareJoinAttempt({ token, trust: h.trust, claims, role: options.role, attestor: options.attestor, keys });
  const body = JSON.parse(attempt.body);
  options.mutate?.(body);
  const answer = await h.service.join(body);
  const parsed = JSON.parse(answer.body.toString());
  // `answer` is the verified body: a `joined` one, or the `pending` deferral of a discovery join.
  const verified = answer.status === 200 ? verifiedJoinAnswer(answer.body, h.trust, keys, options.expectedRole) : null;
  return { status: answer.status, bytes: answer.body, json: parsed, answer: verified, keys };
}

/** Waits (polling PostgreSQL's lock graph) until a backend waits directly on `pid`'s locks. */
export async function untilBlockedBy(pid: number, what = 'the awaited backend never blocked'): Promise<void> {
  for (let i = 0; ; i++) {
    const blocked = await testDb().$queryRawUnsafe<unknown[]>(
      `SELECT 1 FROM pg_stat_activity WHERE ${Number(pid)} = ANY(pg_blocking_pids(pid))`,
    );
    if (blocked.length) return;
    if (i > 500) throw new Error(what);
    await new Promise((r) => setTimeout(r, 10));
  }
}
