import net from 'node:net';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentity } from '../../agent/identity-store';
import { loadIdentity } from '../../agent/renew/identity';
import { renewOnce } from '../../agent/renew/renew';
import { openSession, type AgentSession } from '../../agent/session/session-client';
import { verifyJoinAnswer, type IssuedAnswer } from '../../agent/verify-answer';
import { BASE, startMetricsStack } from '../../test/metrics-stack';
import { parsePrometheusText, sampleValue, type Family } from '../../test/prometheus-text';
import { machineClaims } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { createCaller } from '../api/root';
import { createJoinToken } from '../tokens/join-tokens';
import { issueJoinToken } from '../tokens/issue';

// GET /metrics of the production server (test/server-main.ts) and of a gateway process (as npm start runs
// it), scraped before and after a known sequence of joins through the gateway: one admitted, two refused for
// two reasons, one deferred into a join request that an operator approves and whose retry is admitted, and
// one renewal; the renewed node then opens a session. Counters are per instance; the exact deltas are asserted.

let stack: Awaited<ReturnType<typeof startMetricsStack>>;
let session: AgentSession | undefined;

beforeAll(async () => {
  stack = await startMetricsStack();
}, 120_000);

afterAll(async () => {
  session?.close();
  await stack?.stop();
});

describe('GET /metrics on the API', () => {
  it('is 401 without the bearer token or with another one, in the error model', async () => {
    const { apiToken, scrapeApi } = stack;
    for (const authorization of [null, `Bearer ${apiToken}x`, `Bearer ${apiToken.slice(0, -1)}`, apiToken, `Basic ${apiToken}`]) {
      const scrape = await scrapeApi(authorization);
      expect(scrape.status, String(authorization)).toBe(401);
      expect(JSON.parse(scrape.text)).toEqual({ code: 'ACCESS_DENIED', message: expect.any(String) });
      expect(scrape.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(scrape.text).not.toContain('better_compute');
    }
  });

  it('counts a known sequence exactly, and the output parses as Prometheus text', { timeout: 120_000 }, async () => {
    const { database, gatewayPort, target, trust, pool, admin, scrapeGateway, parsed, join } = stack;
    const before = await parsed();
    const gwBefore = parsePrometheusText((await scrapeGateway()).text);

    // 1. Admitted through a token of maxUses 1.
    const token = (
      await createJoinToken(database.db, admin, {
        tenantId: pool.ownerTenantId,
        poolId: pool.id,
        ttlSeconds: 3600,
        idempotencyKey: 'metrics-1',
        maxUses: 1,
        allowReclaim: false,
      })
    ).token!;
    const admitted = await join(token);
    expect(admitted.status).toBe(200);
    // 2. Refused twice, for two reasons: the spent token again (exhausted), and a wrong secret.
    expect((await join(token)).status).toBe(403);
    const wrongSecret = token.replace(/\.[^.]+$/, `.${randomBytes(32).toString('base64url')}`);
    expect((await join(wrongSecret)).status).toBe(403);
    // 3. A PXE machine is deferred into a join request, approved, and its retry (same CSR) admitted.
    const mac = randomMac();
    const discovery = await database.db.$transaction((tx) =>
      issueJoinToken(tx, {
        tenantId: pool.ownerTenantId,
        poolId: null,
        siteId: pool.siteId,
        role: 'discovery',
        ttlSeconds: 600,
        maxUses: 1,
        boundMac: mac,
        discovery: { ip: '10.0.0.7', workflowId: 'wf-1', vouchedBy: 'module:boot', bootLeaseEpoch: 7 },
        createdBy: 'module:boot',
      }),
    );
    const pending = await join(discovery.token!, { claims: machineClaims({ macs: [mac] }), discovery: true });
    expect(pending.status).toBe(200);
    const requestId = JSON.parse(Buffer.from(pending.json.body, 'base64').toString()) as { status: string; requestId: string };
    expect(requestId.status).toBe('pending');
    await createCaller({ db: database.db, principal: admin }).joinRequests.approve({
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      requestId: requestId.requestId,
      ttlSeconds: 900,
    });
    const retried = await join(discovery.token!, { claims: pending.claims, discovery: true, keys: pending.keys });
    expect(retried.status).toBe(200);
    expect(JSON.parse(Buffer.from(retried.json.body, 'base64').toString()).status).toBe('joined');
    // 4. The first node renews through the gateway.
    const answer = verifyJoinAnswer(admitted.json, {
      signingKeyPin: trust.signingKeyPin,
      signingCertificateDer: trust.signingCertificateDer,
      csrSha256: admitted.keys.csrSha256,
      publicKeySpkiDer: admitted.keys.spkiDer,
      expectedRole: 'node',
    }) as IssuedAnswer;
    const dir = await mkdtemp(path.join(tmpdir(), 'bc-metrics-'));
    await writeIdentity(dir, {
      privateKeyPem: admitted.keys.privateKeyPem,
      certificateChain: answer.certificateChain,
      nodeId: answer.nodeId,
      siteId: answer.siteId,
      trustDomain: answer.trustDomain,
      role: answer.role,
    });
    const renewed = await renewOnce(await loadIdentity(dir), target);
    // 4b. The renewed node opens a session through the gateway and keeps it open until the scrape.
    const renewedDir = await mkdtemp(path.join(tmpdir(), 'bc-metrics-renewed-'));
    await writeIdentity(renewedDir, renewed);
    session = await openSession(target, await loadIdentity(renewedDir), {
      basePath: BASE,
      agentVersion: '0.1.0-test',
      signingKey: new X509Certificate(trust.signingCertificateDer).publicKey,
    });
    // 5. One handshake that is not TLS, for the gateway's failure counter.
    await new Promise<void>((resolve) => {
      const socket = net.connect(gatewayPort, '127.0.0.1', () => socket.end('not tls\r\n\r\n'));
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
    });
    // A live token for the gauge.
    await createJoinToken(database.db, admin, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      maxUses: 5,
      idempotencyKey: 'metrics-2',
      allowReclaim: false,
    });

    // Shared gauges are cached for 5 s per instance: scrape until the snapshot is newer than the sequence.
    let after = await parsed();
    const fresh = (m: Map<string, Family>) =>
      sampleValue(m, 'better_compute_join_requests', { site: pool.siteId, state: 'consumed' }) > 0 &&
      sampleValue(m, 'better_compute_nodes_connected', { pool: pool.id }) > 0;
    for (const start = Date.now(); !fresh(after) && Date.now() - start < 15_000;) {
      await new Promise((r) => setTimeout(r, 500));
      after = await parsed();
    }
    const delta = (name: string, labels: Record<string, string> = {}) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    const joins = (attestor: string, role: string, outcome: string, reason = '') =>
      delta('better_compute_joins_total', { attestor, role, outcome, reason });
    expect(joins('join-token', 'node', 'admitted')).toBe(1);
    expect(joins('join-token', 'node', 'refused', 'join-token:exhausted')).toBe(1);
    expect(joins('join-token', 'node', 'refused', 'join-token:secret-mismatch')).toBe(1);
    expect(joins('discovery', 'discovery', 'pending')).toBe(1);
    expect(joins('discovery', 'discovery', 'admitted')).toBe(1);
    const allJoins = after.get('better_compute_joins_total')!.samples.reduce((sum, s) => sum + s.value, 0);
    expect(allJoins - (before.get('better_compute_joins_total')?.samples.reduce((sum, s) => sum + s.value, 0) ?? 0)).toBe(5);
    expect(delta('better_compute_join_duration_seconds_count', { attestor: 'join-token', outcome: 'refused' })).toBe(2);
    expect(delta('better_compute_join_duration_seconds_count', { attestor: 'discovery', outcome: 'admitted' })).toBe(1);
    // Every one of the five went through an admission transaction.
    expect(delta('better_compute_admission_batch_size_sum')).toBe(5);
    expect(delta('better_compute_admission_transaction_seconds_count')).toBe(delta('better_compute_admission_batch_size_count'));
    expect(delta('better_compute_renewals_total', { outcome: 'renewed', reason: '' })).toBe(1);
    expect(delta('better_compute_renewal_duration_seconds_count')).toBe(1);

    // Shared state, read from PostgreSQL.
    expect(sampleValue(after, 'better_compute_join_requests', { site: pool.siteId, state: 'consumed' })).toBe(1);
    expect(sampleValue(after, 'better_compute_join_requests', { site: pool.siteId, state: 'pending' })).toBe(0);
    expect(sampleValue(after, 'better_compute_join_request_wait_seconds_count', { site: pool.siteId, decision: 'approved' })).toBe(1);
    expect(
      sampleValue(after, 'better_compute_join_request_wait_seconds_bucket', { site: pool.siteId, decision: 'approved', le: '60' }),
    ).toBe(1);
    expect(sampleValue(after, 'better_compute_join_tokens_active', { pool: pool.id })).toBe(1);
    const nodesInPool = await database.db.node.groupBy({ by: ['state'], where: { poolId: pool.id }, _count: true });
    expect(nodesInPool.length).toBeGreaterThan(0);
    for (const row of nodesInPool) expect(sampleValue(after, 'better_compute_nodes', { pool: pool.id, state: row.state })).toBe(row._count);
    expect(sampleValue(after, 'better_compute_node_certificates_expiring', { pool: pool.id, within: '24h' })).toBe(
      nodesInPool.reduce((s, r) => s + r._count, 0),
    );
    expect(sampleValue(after, 'better_compute_node_certificates_expiring', { pool: pool.id, within: '1h' })).toBe(0);
    // One of the pool's nodes holds a session (the other holds none); every pool with nodes has a series,
    // 0 where none is connected, so it stays while all are away.
    expect(nodesInPool.reduce((s, r) => s + r._count, 0)).toBe(2);
    const poolsWithNodes = [...new Set((await database.db.node.findMany({ select: { poolId: true } })).map((row) => row.poolId ?? ''))];
    expect(after.get('better_compute_nodes_connected')?.type).toBe('gauge');
    expect(Object.fromEntries(after.get('better_compute_nodes_connected')!.samples.map((s) => [s.labels.pool, s.value]))).toEqual(
      Object.fromEntries(poolsWithNodes.map((id) => [id, id === pool.id ? 1 : 0])),
    );
    // The node with a session said Hello holding no trust set and was sent the server's (version 1); every
    // other node that is not retired holds none.
    const notRetired = await database.db.node.count({ where: { state: { not: 'retired' } } });
    expect(after.get('better_compute_nodes_by_trust_version')?.type).toBe('gauge');
    expect(
      Object.fromEntries(after.get('better_compute_nodes_by_trust_version')!.samples.map((s) => [s.labels.trust_version, s.value])),
    ).toEqual({ '1': 1, older: 0, none: notRetired - 1 });
    for (const name of ['process_cpu_seconds_total', 'nodejs_eventloop_lag_seconds', 'better_compute_pg_pool_waiting'])
      expect(after.has(name), name).toBe(true);
    expect(
      sampleValue(after, 'better_compute_pg_pool_connections', { state: 'idle' }) +
        sampleValue(after, 'better_compute_pg_pool_connections', { state: 'in_use' }),
    ).toBeGreaterThan(0);

    // The gateway counts its own.
    const gwScrape = await scrapeGateway();
    expect(gwScrape.status).toBe(200);
    const gw = parsePrometheusText(gwScrape.text);
    const gwDelta = (labels: Record<string, string>) =>
      sampleValue(gw, 'better_compute_gateway_requests_total', labels) -
      sampleValue(gwBefore, 'better_compute_gateway_requests_total', labels);
    expect(gwDelta({ path: `${BASE}/v1/join`, status: '200' })).toBe(3);
    expect(gwDelta({ path: `${BASE}/v1/join`, status: '403' })).toBe(2);
    expect(gwDelta({ path: `${BASE}/v1/renew`, status: '200' })).toBe(1);
    // The scrape before this one is counted as a request to `other`.
    expect(gwDelta({ path: 'other', status: '200' })).toBe(1);
    expect(
      sampleValue(gw, 'better_compute_gateway_tls_handshake_failures_total') -
        sampleValue(gwBefore, 'better_compute_gateway_tls_handshake_failures_total'),
    ).toBe(1);
    expect(gw.get('better_compute_gateway_connections')?.type).toBe('gauge');
    expect(gw.has('better_compute_joins_total')).toBe(false);
  });
});

describe('GET /metrics on the gateway', () => {
  it('is 401 without its token, and the API token is not the gateway token', async () => {
    const { apiToken, scrapeGateway } = stack;
    expect((await scrapeGateway(null)).status).toBe(401);
    expect((await scrapeGateway(`Bearer ${apiToken}`)).status).toBe(401);
  });
});
