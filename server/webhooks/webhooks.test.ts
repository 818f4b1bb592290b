import { randomBytes } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb, testDatabaseUrl } from '../../test/db';
import { randomMac } from '../../test/discovery-harness';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { Receiver, until } from '../../test/webhook-receiver';
import { createCaller } from '../api/root';
import { createPgPool } from '../db/pg';
import { publishEvent } from '../events/publish';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from './config';
import { publishExpiredJoinRequests } from './expiry';
import { serverSecrets } from './secret';
import { WebhookWorker } from './worker';

const FAST: WebhookSettings = {
  ...DEFAULT_WEBHOOK_SETTINGS,
  allowPrivate: true,
  retryBaseMs: 100,
  retryMaxMs: 400,
  sweepMs: 100,
  disableAfterMs: 0,
  disableMinFailures: 4,
  timeoutMs: 2_000,
};

describe('signed webhooks', () => {
  const receiver = new Receiver();
  const pools: pg.Pool[] = [];
  let worker: WebhookWorker;
  let t: TestTenant;
  const saved = { secret: process.env.BETTER_COMPUTE_SECRET, allow: process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE };

  const newWorker = (settings: WebhookSettings) => {
    const pool = createPgPool(testDatabaseUrl(), 4);
    pools.push(pool);
    return new WebhookWorker({ pool, databaseUrl: testDatabaseUrl(), settings, secrets: () => serverSecrets(), onlyTenants: [t.tenantId] });
  };
  const admin = () => createCaller({ db: testDb(), principal: t.admin });
  const subscribe = async (path: string, eventTypes: string[], tenant = t) => {
    const created = await createCaller({ db: testDb(), principal: tenant.admin }).webhooks.create({
      tenantId: tenant.tenantId,
      url: receiver.url(path),
      eventTypes: eventTypes as never,
    });
    receiver.secrets.set(path, created.secret);
    return created;
  };

  beforeAll(async () => {
    process.env.BETTER_COMPUTE_SECRET = randomBytes(32).toString('base64url');
    process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = 'true';
    await receiver.start();
    t = await createTestTenant(testDb(), { label: 'webhooks' });
    worker = newWorker(FAST);
    await worker.start();
  });

  afterAll(async () => {
    await worker?.stop();
    await Promise.all(pools.map((p) => p.end()));
    await receiver.close();
    process.env.BETTER_COMPUTE_SECRET = saved.secret;
    if (saved.allow === undefined) delete process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE;
    else process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = saved.allow;
  });

  it('creates a subscription with a whsec_ secret shown once and stored sealed', async () => {
    const created = await subscribe('/created', ['node.joined']);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    const row = await testDb().webhookSubscription.findUniqueOrThrow({ where: { id: created.id } });
    expect(Buffer.from(row.sealedSecret).includes(Buffer.from(created.secret.slice(6)))).toBe(false);
    expect(JSON.stringify(await admin().webhooks.list({ tenantId: t.tenantId }))).not.toContain(created.secret);
    await admin().webhooks.delete({ tenantId: t.tenantId, webhookId: created.id });
  });

  it('signs deliveries; retries a 500 with the same webhook-id until a 200', async () => {
    receiver.script.set('/retry', [500, 500, 200]);
    const sub = await subscribe('/retry', ['node.joined']);
    await publishEvent(testDb(), { tenantId: t.tenantId, type: 'node.joined', data: { nodeId: 'node_retry', poolId: t.poolId } });
    const got = await until('three attempts', () => (receiver.at('/retry').length >= 3 ? receiver.at('/retry') : null));
    expect(got).toHaveLength(3);
    expect(new Set(got.map((r) => r.id)).size).toBe(1);
    expect(got.every((r) => r.verified)).toBe(true);
    expect(got[0]!.body).toMatchObject({ type: 'node.joined', data: { nodeId: 'node_retry', poolId: t.poolId } });
    expect(new Date(got[0]!.body.timestamp).toISOString()).toBe(got[0]!.body.timestamp);
    const [delivery] = await until('delivered', async () => {
      const items = (await admin().webhooks.deliveries({ tenantId: t.tenantId, webhookId: sub.id })).items;
      return items[0]?.state === 'delivered' ? items : null;
    });
    expect(delivery).toMatchObject({ id: got[0]!.id, attempts: 3, lastStatus: 200, eventType: 'node.joined', nextAttemptAt: null });
    // A success ends the run of failures.
    expect(await admin().webhooks.get({ tenantId: t.tenantId, webhookId: sub.id })).toMatchObject({
      enabled: true,
      consecutiveFailures: 0,
    });
  });

  it('sends a subscription only the types it names', async () => {
    const cordons = await subscribe('/cordons', ['node.cordoned']);
    const joins = await subscribe('/joins', ['node.joined']);
    await publishEvent(testDb(), { tenantId: t.tenantId, type: 'node.joined', data: { nodeId: 'node_a' } });
    await publishEvent(testDb(), { tenantId: t.tenantId, type: 'node.cordoned', data: { nodeId: 'node_b' } });
    await until('both delivered', () => receiver.at('/joins').length >= 1 && receiver.at('/cordons').length >= 1);
    // Another tenant's event of the named type reaches neither.
    const other = await createTestTenant(testDb(), { label: 'webhooks-other' });
    await publishEvent(testDb(), { tenantId: other.tenantId, type: 'node.joined', data: { nodeId: 'node_other' } });
    await admin().webhooks.test({ tenantId: t.tenantId, webhookId: joins.id });
    await until('the test event', () => receiver.at('/joins').some((r) => r.body.type === 'webhook.test'));
    expect(receiver.at('/cordons').map((r) => r.body.type)).toEqual(['node.cordoned']);
    expect(receiver.at('/joins').map((r) => r.body.type)).toEqual(['node.joined', 'webhook.test']);
    expect(receiver.at('/joins')[0]!.body.data).toEqual({ nodeId: 'node_a' });
    expect(await testDb().webhookDelivery.count({ where: { subscriptionId: { in: [cordons.id, joins.id] } } })).toBe(3);
  });

  it('disables a subscription whose deliveries keep failing, and publishes that', async () => {
    receiver.script.set('/down', [503]);
    const sub = await subscribe('/down', ['node.cordoned']);
    const watcher = await subscribe('/watcher', ['webhook.subscription.disabled']);
    await publishEvent(testDb(), { tenantId: t.tenantId, type: 'node.cordoned', data: { nodeId: 'node_down' } });
    const record = await until('disabled', async () => {
      const r = await admin().webhooks.get({ tenantId: t.tenantId, webhookId: sub.id });
      return r.enabled ? null : r;
    });
    expect(record.disabledReason).toMatch(/failed/);
    expect(record.consecutiveFailures).toBe(FAST.disableMinFailures);
    const events = await testDb().event.findMany({ where: { tenantId: t.tenantId, type: 'webhook.subscription.disabled' } });
    expect(events.map((e) => (e.data as { webhookId: string }).webhookId)).toEqual([sub.id]);
    const told = await until('the disabled event delivered', () => receiver.at('/watcher')[0]);
    expect(told).toMatchObject({ verified: true, body: { type: 'webhook.subscription.disabled', data: { webhookId: sub.id } } });
    expect(watcher.enabled).toBe(true);
    // Disabled: no further attempts, and no new outbox rows.
    const attempts = receiver.at('/down').length;
    await publishEvent(testDb(), { tenantId: t.tenantId, type: 'node.cordoned', data: { nodeId: 'node_down2' } });
    await new Promise((r) => setTimeout(r, 600));
    expect(receiver.at('/down').length).toBe(attempts);
    expect(await testDb().webhookDelivery.count({ where: { subscriptionId: sub.id } })).toBe(1);
    // Enabling it again clears the failures; a redelivery under the same id then succeeds.
    receiver.script.set('/down', [200]);
    await admin().webhooks.update({ tenantId: t.tenantId, webhookId: sub.id, enabled: true });
    const [pending] = (await admin().webhooks.deliveries({ tenantId: t.tenantId, webhookId: sub.id })).items;
    await admin().webhooks.redeliver({ tenantId: t.tenantId, webhookId: sub.id, deliveryId: pending!.id });
    await until(
      'redelivered',
      async () => (await admin().webhooks.deliveries({ tenantId: t.tenantId, webhookId: sub.id })).items[0]?.state === 'delivered',
    );
    expect(receiver.at('/down').at(-1)!.id).toBe(pending!.id);
  });

  it('delivers each delivery once with two workers on one database', { timeout: 90_000 }, async () => {
    const second = newWorker(FAST);
    await second.start();
    try {
      const sub = await subscribe('/pair', ['node.connected']);
      await testDb()
        .$executeRaw`INSERT INTO events (tenant_id, type, data) SELECT ${t.tenantId}, 'node.connected', jsonb_build_object('i', i) FROM generate_series(1, 60) i`;
      await until('60 deliveries', () => receiver.at('/pair').length >= 60, 60_000);
      await new Promise((r) => setTimeout(r, 500));
      const ids = receiver.at('/pair').map((r) => r.id);
      expect(ids).toHaveLength(60);
      expect(new Set(ids).size).toBe(60);
      const rows = await testDb().webhookDelivery.findMany({ where: { subscriptionId: sub.id } });
      expect(rows.every((r) => r.state === 'delivered' && r.attempts === 1)).toBe(true);
    } finally {
      await second.stop();
    }
  });

  it('carries a join request of a real discovery join, its rejection and an expiry', { timeout: 60_000 }, async () => {
    const h: JoinHarness = await createJoinHarness();
    try {
      await subscribe('/queue', ['node.join-request.created', 'security.join-request.rejected', 'node.join-request.expired']);
      const pending = async () => {
        const mac = randomMac();
        const token = (await createDiscoveryToken(testDb(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 }))
          .token!;
        const answer = await agentJoin(h, token, machineClaims({ macs: [mac] }), {
          role: 'discovery',
          attestor: 'discovery',
          keys: generateNodeKeyAndCsr(),
        });
        return (answer.answer as unknown as { requestId: string }).requestId;
      };
      const [rejected, expiring] = [await pending(), await pending()];
      await until('two join requests', () => receiver.at('/queue').filter((r) => r.body.type === 'node.join-request.created').length >= 2);
      const created = receiver.at('/queue').filter((r) => r.body.type === 'node.join-request.created');
      expect(created.map((r) => r.body.data.requestId).sort()).toEqual([rejected, expiring].sort());
      expect(created[0]).toMatchObject({ verified: true, body: { data: { siteId: t.siteId, attestor: 'discovery' } } });

      await admin().joinRequests.reject({ tenantId: t.tenantId, poolId: t.poolId, requestId: rejected, reason: 'not ours' });
      const decided = await until('the rejection', () =>
        receiver.at('/queue').find((r) => r.body.type === 'security.join-request.rejected'),
      );
      expect(decided.body.data).toMatchObject({ requestId: rejected, reason: 'not ours' });

      await testDb().$executeRaw`UPDATE join_requests SET expires_at = compute_now() - interval '1 second' WHERE id = ${expiring}`;
      expect(await publishExpiredJoinRequests(pools[0]!)).toBeGreaterThanOrEqual(1);
      expect(await publishExpiredJoinRequests(pools[0]!)).toBe(0);
      const expired = await until('the expiry', () => receiver.at('/queue').find((r) => r.body.type === 'node.join-request.expired'));
      expect(expired.body.data).toMatchObject({ requestId: expiring, state: 'pending', siteId: t.siteId });
    } finally {
      await h.pool.end();
    }
  });

  it('refuses non-public targets at creation and at delivery, without connecting', async () => {
    delete process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE;
    for (const url of [
      'http://127.0.0.1:9/x',
      'https://10.1.2.3/x',
      'https://169.254.169.254/latest',
      'http://[::1]:9/x',
      'http://localhost/x',
      'ftp://example.com/x',
      'https://u:p@example.com/',
    ]) {
      const refused = await failure(admin().webhooks.create({ tenantId: t.tenantId, url, eventTypes: ['node.joined'] }));
      expect(refused, url).toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(refused.message, url).toMatch(/url/);
    }
    // Subscriptions made while private targets were allowed; a worker without ALLOW_PRIVATE refuses them
    // at delivery (DNS or the setting can change after creation).
    process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = 'true';
    const local = new Receiver();
    await local.start();
    const v6 = net.createServer((s) => s.destroy());
    let v6Connections = 0;
    v6.on('connection', () => v6Connections++);
    const v6Port = await new Promise<number>((resolve, reject) => {
      v6.once('error', reject);
      v6.listen(0, '::1', () => resolve((v6.address() as AddressInfo).port));
    }).catch(() => 0);
    await worker.stop();
    let cleanup: { id: string }[] = [];
    const strict = newWorker({ ...FAST, allowPrivate: false });
    try {
      const urls = [
        local.url('/ssrf'),
        'http://10.0.0.1/x',
        'http://169.254.169.254/latest/meta-data',
        `http://[::1]:${v6Port || 9}/x`,
        `http://localhost:${local.port}/x`,
      ];
      const subs: { id: string }[] = [];
      cleanup = subs;
      for (const url of urls) subs.push(await admin().webhooks.create({ tenantId: t.tenantId, url, eventTypes: ['node.uncordoned'] }));
      delete process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE;
      await publishEvent(testDb(), { tenantId: t.tenantId, type: 'node.uncordoned', data: { nodeId: 'node_ssrf' } });
      await strict.start();
      const rows = await until('every target refused', async () => {
        const found = await testDb().webhookDelivery.findMany({ where: { subscriptionId: { in: subs.map((s) => s.id) } } });
        return found.length === subs.length && found.every((r) => r.attempts >= 1 && r.lastError) ? found : null;
      });
      for (const row of rows) expect(row.lastError, row.subscriptionId).toMatch(/^refused: /);
      expect(rows.every((r) => r.lastStatus === null && r.state === 'pending')).toBe(true);
      expect(local.connections).toBe(0);
      expect(v6Connections).toBe(0);
    } finally {
      await strict.stop();
      for (const sub of cleanup) await admin().webhooks.delete({ tenantId: t.tenantId, webhookId: sub.id });
      await local.close();
      v6.close();
      process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = 'true';
      worker = newWorker(FAST);
      await worker.start();
    }
  });

  it('answers NOT_FOUND for another tenant’s subscription', async () => {
    const sub = await subscribe('/mine', ['node.joined']);
    const other = await createTestTenant(testDb(), { label: 'webhooks-outsider' });
    const outsider = createCaller({ db: testDb(), principal: other.admin });
    expect(await failure(outsider.webhooks.get({ tenantId: other.tenantId, webhookId: sub.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(outsider.webhooks.delete({ tenantId: other.tenantId, webhookId: sub.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(outsider.webhooks.get({ tenantId: t.tenantId, webhookId: sub.id }))).toMatchObject({ code: 'NOT_FOUND' });
  });
});
