import type pg from 'pg';
import type { Registry } from 'prom-client';
import { createDb, type Db } from '../db/client';
import { createPgPool } from '../db/pg';
import { EventsListener } from '../events/listener';
import type { AgentEndpointServices } from '../entry/agent-endpoints';
import { buildWellKnownDocument } from '../entry/well-known';
import { createRequestLimits, type RequestLimitOverrides } from '../http/request-limits';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { JoinService } from '../join/join-service';
import type { JoinPreparer } from '../join/prepare';
import type { RefusalLimit } from '../join/refusals';
import { JOIN_STATS_PREFIX, PkiSource, joinInFlight, rootTenantIdOf, type PkiRuntime } from '../join/join-runtime';
import { apiRegistry } from '../metrics/api-endpoint';
import { createApiMetrics, type ApiMetrics } from '../metrics/api-metrics';
import { JoinRequestListener } from '../requests/listener';
import type { RenewRefusalLimit } from '../renew/refusals';
import { RenewService } from '../renew/renew-service';
import { renewalsPerNodePerHour } from '../renew/renew-limit';
import type { SessionRefusalLimit } from '../sessions/refusals';
import { SessionService } from '../sessions/session-service';
import { CommandResultService } from '../commands/result';
import { SessionsListener } from '../sessions/session-watch';
import { followTrustChanges } from '../sessions/trust-delivery';
import { sessionSettingsFromEnv, type SessionSettings } from '../sessions/settings';
import { newRequestLimitsFromEnv } from '../config/join-request-limits';
import { GatewayCredentialsService } from '../gateway-credentials/credentials-service';
import { recordGatewayCall } from '../gateway-credentials/gateway-calls';
import { SharedRateLimit, type RateLimitRule } from '../http/shared-rate-limit';
import type { NewRequestLimits } from '../join/request-admission';
import { SiteAgentService } from '../sites/site-agent-service';

type Env = Record<string, string | undefined>;

/**
 * Everything a server process wires once: the database clients, the PKI at run time, the join, renewal and
 * session services, the API's metrics and the LISTEN connections. Built by {@link createServices} only; the
 * clock is the database's `now()` (`compute_now()`), the keys come from `pki`, randomness from node:crypto.
 */
export interface Services extends Pick<
  AgentEndpointServices,
  'join' | 'renew' | 'sessions' | 'commandResults' | 'gatewayCredentials' | 'siteAgent' | 'endpointLimits'
> {
  databaseUrl: string;
  db: Db;
  /** The hot paths' node-postgres pool (joins, renewals, sessions, the shared gauges). */
  pg: pg.Pool;
  /**
   * The PKI at run time. Read `load()` per call (never keep a runtime across calls): it changes with every
   * rotation step. `onChange` (the process's PkiSource has it) tells of every new runtime within seconds.
   */
  pki: {
    load(): Promise<PkiRuntime | null>;
    loadCrypto(): Promise<JoinCrypto | null>;
    onChange?(listener: (runtime: PkiRuntime) => void): () => void;
  };
  rootTenantId(): Promise<string | null>;
  metrics: ApiMetrics;
  /** The well-known document (protocol.md), with this process's PKI. */
  wellKnown(): Promise<Record<string, unknown>>;
  /** The registry GET /metrics serves: `metrics` plus the shared gauges. */
  metricsRegistry(): Registry;
  /** The process's LISTEN on `compute_events` (opened on first use). */
  eventsListener(): EventsListener;
  /** The process's LISTEN on the session-end channel, shared by every gateway's watch stream (opened on first use). */
  sessionsListener(): SessionsListener;
  /** The process's LISTEN on the join-request channel (opened on first use). */
  joinRequestListener(): JoinRequestListener;
  close(): Promise<void>;
}

interface ServiceOptions {
  databaseUrl: string;
  env?: Env;
  /** Where joins are prepared (the server's worker threads); the calling thread by default. */
  preparer?: JoinPreparer;
  /** An existing client to use instead of a new one (closed by its owner, not by `close`). */
  db?: Db;
  pgPoolMax?: number;
  /** Tests: keys and root tenant of their own instead of the stored PKI's. */
  pki?: Services['pki'];
  rootTenantId?: () => Promise<string | null>;
  /** Tests: refusal-event rate limits with keys of their own. */
  refusalLimits?: { join?: RefusalLimit; renew?: RenewRefusalLimit; sessions?: SessionRefusalLimit };
  sessionSettings?: SessionSettings;
  /** Tests: the downloads' and the well-known document's request limits, with numbers and keys of their own. */
  endpointLimits?: RequestLimitOverrides;
  /** Tests: the per-gateway limit of credentials calls, with numbers and keys of their own. */
  gatewayCredentialsLimit?: Partial<RateLimitRule>;
  /** Tests: the per-site-agent limit of mint and redeem calls, with numbers and keys of their own. */
  siteAgentLimit?: Partial<RateLimitRule>;
  /** Tests: a JoinService's batch size (128). */
  maxBatch?: number;
  /** Tests: new-join-request rate limits (with keys) of their own instead of the environment's. */
  requestLimits?: NewRequestLimits;
}

const certTtl = (env: Env) => (env.BETTER_COMPUTE_CERT_TTL_SECONDS ? Number(env.BETTER_COMPUTE_CERT_TTL_SECONDS) : undefined);

/** The composition root: builds a process's (or a test's) services from its settings. */
export function createServices(options: ServiceOptions): Services {
  const env = options.env ?? process.env;
  const db = options.db ?? createDb(options.databaseUrl);
  const pool = createPgPool(options.databaseUrl, options.pgPoolMax);
  const source = options.pki ? null : new PkiSource(db, () => env.BETTER_COMPUTE_SECRET, { databaseUrl: options.databaseUrl, watch: true });
  const pki = options.pki ?? source!;
  const rootTenantId = options.rootTenantId ?? rootTenantIdOf(db);
  const metrics = createApiMetrics();
  const common = { pool, loadRootTenantId: rootTenantId, metrics };
  const join = new JoinService({
    ...common,
    loadCrypto: () => pki.loadCrypto(),
    preparer: options.preparer,
    certTtlSeconds: certTtl(env),
    maxInFlight: joinInFlight(env),
    maxBatch: options.maxBatch,
    refusalLimit: options.refusalLimits?.join,
    requestLimits: options.requestLimits ?? newRequestLimitsFromEnv(env),
  });
  const renew = new RenewService({
    ...common,
    loadRuntime: () => pki.load(),
    certTtlSeconds: certTtl(env),
    renewalsPerHour: renewalsPerNodePerHour(env, certTtl(env)),
    refusalLimit: options.refusalLimits?.renew,
  });
  const sessions = new SessionService({
    pool,
    loadRuntime: () => pki.load(),
    loadRootTenantId: rootTenantId,
    settings: options.sessionSettings ?? sessionSettingsFromEnv(env),
    refusalLimit: options.refusalLimits?.sessions,
  });
  const commandResults = new CommandResultService({ pool, loadRuntime: () => pki.load() });
  // A gateway asks every few seconds (server/gateway/credentials-follower.ts): 20 a minute. The limit leaves room
  // for a few gateways that share one certificate.
  const gatewayCredentials = new GatewayCredentialsService({
    loadRuntime: () => pki.load(),
    record: (call) => recordGatewayCall(pool, call),
    limit: new SharedRateLimit(pool, {
      keyPrefix: 'gateway-credentials',
      limit: 120,
      windowSeconds: 60,
      ...options.gatewayCredentialsLimit,
    }),
  });
  // A site agent mints one token and redeems it per PXE boot: 120 calls a minute is 60 boots a minute per agent.
  const siteAgent = new SiteAgentService({
    db,
    pool,
    loadRuntime: () => pki.load(),
    loadRootTenantId: rootTenantId,
    serverSecrets: () => [env.BETTER_COMPUTE_SECRET, env.BETTER_COMPUTE_PREVIOUS_SECRET].filter((s): s is string => !!s),
    limit: new SharedRateLimit(pool, { keyPrefix: 'site-agent', limit: 120, windowSeconds: 60, ...options.siteAgentLimit }),
  });
  const registry = apiRegistry(metrics, pool);
  let events: EventsListener | undefined;
  let joinRequests: JoinRequestListener | undefined;
  let sessionEnds: SessionsListener | undefined;
  // A new trust set reaches every open session: the gateways watching this process make a lease call now.
  followTrustChanges(pki, () => sessionEnds?.announceToEveryGateway());
  return {
    databaseUrl: options.databaseUrl,
    db,
    pg: pool,
    pki,
    rootTenantId,
    join,
    renew,
    sessions,
    commandResults,
    gatewayCredentials,
    siteAgent,
    metrics,
    endpointLimits: createRequestLimits(pool, env, options.endpointLimits),
    wellKnown: () => buildWellKnownDocument(() => pki.load()),
    metricsRegistry: registry,
    eventsListener: () => (events ??= new EventsListener(options.databaseUrl)),
    joinRequestListener: () => (joinRequests ??= new JoinRequestListener(options.databaseUrl)),
    sessionsListener: () => (sessionEnds ??= new SessionsListener(options.databaseUrl)),
    async close() {
      await Promise.all([events?.close(), joinRequests?.close(), sessionEnds?.close(), source?.close()]);
      await pool.end();
      if (!options.db) await db.$disconnect();
    },
  };
}

/**
 * Prints the join pipeline's counters on SIGUSR2 when BETTER_COMPUTE_JOIN_STATS=1 (the join benchmark's
 * profile), one stdout line starting with JOIN_STATS_PREFIX.
 */
export function printJoinStatsOnSignal(services: Services, env: Env = process.env) {
  if (env.BETTER_COMPUTE_JOIN_STATS !== '1') return;
  process.on('SIGUSR2', () => process.stdout.write(`${JOIN_STATS_PREFIX}${JSON.stringify(services.join.pipelineStats)}\n`));
}

/*
 * The process's services. One slot, keyed in the global symbol registry: Next's production bundle loads its
 * own copy of every server module, and its route handlers must reach the services the boot server built
 * (one Prisma client, one pool, one set of LISTEN connections per process) rather than wire a second set.
 * Only the Next.js adapter's entry (./next-entry.ts) reads it; everything else is handed its services.
 */
const SLOT = Symbol.for('better-compute.services');
const slot = globalThis as unknown as { [SLOT]?: Services };

/** Makes `services` the process's (the boot server does, before it takes requests). */
export function installProcessServices(services: Services): Services {
  slot[SLOT] = services;
  return services;
}

/**
 * The process's services: those the boot server installed, else (a process that did not start through it,
 * such as a CLI command run in process) built once from DATABASE_URL.
 */
export function processServices(): Services {
  const installed = slot[SLOT];
  if (installed) return installed;
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: start the server with `npm start`, which provides it');
  return installProcessServices(createServices({ databaseUrl: url }));
}
