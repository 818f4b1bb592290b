import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { createServerDatabase, newServerSecret, startServerProcess, type ServerDatabase } from '../../test/server-process';
import { Receiver, until } from '../../test/webhook-receiver';
import { createCaller } from '../api/root';
import { createDb, type Db } from '../db/client';
import { createPgPool } from '../db/pg';
import { publishEvent } from '../events/publish';
import { DEFAULT_WEBHOOK_SETTINGS } from './config';
import { resealWebhookSecrets } from './reseal';
import { openWebhookSecret } from './secret';
import { WebhookWorker } from './worker';

const opensUnder = (row: { id: string; sealedSecret: Uint8Array }, secret: string) => {
  try {
    return openWebhookSecret(row.sealedSecret, row.id, [secret]);
  } catch {
    return null;
  }
};

// The re-seal reads every subscription of the database, so this file works in a database of its own.
describe('re-sealing webhook secrets under a new BETTER_COMPUTE_SECRET', { timeout: 120_000 }, () => {
  const [A, B, C] = [newServerSecret(), newServerSecret(), newServerSecret()];
  const receiver = new Receiver();
  let database: ServerDatabase;
  let db: Db;
  let t: TestTenant;
  const saved = {
    secret: process.env.BETTER_COMPUTE_SECRET,
    previous: process.env.BETTER_COMPUTE_PREVIOUS_SECRET,
    allow: process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE,
  };
  const restore = (key: string, value: string | undefined) => (value === undefined ? delete process.env[key] : (process.env[key] = value));

  /** Subscribes `path` to `node.joined` on a server whose BETTER_COMPUTE_SECRET is `secret`; returns its id and plaintext secret. */
  const subscribe = async (path: string, secret: string) => {
    process.env.BETTER_COMPUTE_SECRET = secret;
    const created = await createCaller({ db, principal: t.admin }).webhooks.create({
      tenantId: t.tenantId,
      url: receiver.url(path),
      eventTypes: ['node.joined'],
    });
    receiver.secrets.set(path, created.secret);
    return { id: created.id, path, secret: created.secret };
  };
  const subscribeMany = async (prefix: string, count: number, secret: string) => {
    const subs: Awaited<ReturnType<typeof subscribe>>[] = [];
    for (let i = 0; i < count; i++) subs.push(await subscribe(`${prefix}-${i}`, secret));
    return subs;
  };
  const stored = async () =>
    new Map(
      (await db.webhookSubscription.findMany({ select: { id: true, sealedSecret: true } })).map((r) => [r.id, Buffer.from(r.sealedSecret)]),
    );

  beforeAll(async () => {
    delete process.env.BETTER_COMPUTE_PREVIOUS_SECRET;
    process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = 'true';
    database = await createServerDatabase('webhook_reseal');
    db = database.db;
    t = await createTestTenant(db, { label: 'reseal' });
    await receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
    await database?.close();
    restore('BETTER_COMPUTE_SECRET', saved.secret);
    restore('BETTER_COMPUTE_PREVIOUS_SECRET', saved.previous);
    restore('BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE', saved.allow);
  });
  beforeEach(async () => {
    await db.webhookSubscription.deleteMany({});
  });

  it('moves secrets sealed under the previous secret to the current one: receivers verify with their original secret', async () => {
    const subs = await subscribeMany('/moved', 5, A);
    const unknown = await subscribe('/unknown', C);
    const before = await stored();

    // batchSize 2: three batches, the last one holding the unreadable row too.
    const first = await resealWebhookSecrets(db, { secret: B, previousSecret: A, batchSize: 2 });
    expect(first).toEqual({ resealed: 5, current: 0, unreadable: [unknown.id] });
    const after = await stored();
    for (const sub of subs) {
      const row = { id: sub.id, sealedSecret: after.get(sub.id)! };
      expect(after.get(sub.id)!.equals(before.get(sub.id)!)).toBe(false);
      expect(opensUnder(row, B)).toBe(sub.secret);
      expect(opensUnder(row, A)).toBeNull();
    }
    expect(after.get(unknown.id)!.equals(before.get(unknown.id)!)).toBe(true);

    // Run again (the next start, still with both set): nothing changes.
    expect(await resealWebhookSecrets(db, { secret: B, previousSecret: A, batchSize: 2 })).toEqual({
      resealed: 0,
      current: 5,
      unreadable: [unknown.id],
    });
    const again = await stored();
    expect([...again.keys()].sort()).toEqual([...after.keys()].sort());
    for (const [id, bytes] of after) expect(again.get(id)!.equals(bytes), id).toBe(true);

    // The previous secret removed: the worker opens secrets with B alone. A subscription sealed under A after
    // the re-seal (not moved) shows that such a worker cannot sign with an A-sealed secret.
    const late = await subscribe('/late', A);
    const pool: pg.Pool = createPgPool(database.url, 4);
    const worker = new WebhookWorker({
      pool,
      databaseUrl: database.url,
      settings: { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivate: true, sweepMs: 100, timeoutMs: 5_000 },
      secrets: () => [B],
      onlyTenants: [t.tenantId],
    });
    await worker.start();
    try {
      await publishEvent(db, { tenantId: t.tenantId, type: 'node.joined', data: { nodeId: 'node_reseal' } });
      const got = await until(
        'a delivery to each moved subscription',
        () => (subs.every((s) => receiver.received.some((r) => r.path === s.path)) ? receiver.received : null),
        30_000,
      );
      for (const sub of subs) expect(got.filter((r) => r.path === sub.path).map((r) => r.verified)).toEqual([true]);
      const failed = await until(
        'the late subscription’s attempt',
        async () => {
          const rows = await db.webhookDelivery.findMany({ where: { subscriptionId: { in: [late.id, unknown.id] } } });
          return rows.length === 2 && rows.every((r) => r.lastError) ? rows : null;
        },
        30_000,
      );
      for (const row of failed) expect(row.lastError).toMatch(/does not open a stored webhook secret/);
      expect(receiver.received.some((r) => r.path === '/late' || r.path === '/unknown')).toBe(false);
    } finally {
      await worker.stop();
      await pool.end();
    }
  });

  it('re-seals each subscription once when several instances start at once', async () => {
    const subs = await subscribeMany('/pair', 24, A);
    const others = [createDb(database.url, { max: 2 }), createDb(database.url, { max: 2 }), createDb(database.url, { max: 2 })];
    try {
      const runs = await Promise.all(others.map((other) => resealWebhookSecrets(other, { secret: B, previousSecret: A, batchSize: 4 })));
      expect(runs.reduce((sum, r) => sum + r.resealed, 0)).toBe(24);
      for (const run of runs) expect(run.resealed + run.current).toBe(24);
    } finally {
      await Promise.all(others.map((other) => other.$disconnect()));
    }
    const after = await stored();
    for (const sub of subs) expect(opensUnder({ id: sub.id, sealedSecret: after.get(sub.id)! }, B)).toBe(sub.secret);
  });

  it('leaves a failed batch wholly under the old secret, every row openable; the next start finishes', async () => {
    const subs = await subscribeMany('/crash', 7, A);
    const ids = subs.map((s) => s.id).sort();
    const before = await stored();
    // PostgreSQL refuses the write of the fifth row in id order: the second batch (rows 4 to 6) fails after
    // its first row was written, inside the batch's transaction.
    await db.$executeRawUnsafe(`CREATE FUNCTION reseal_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.id = '${ids[4]}' THEN RAISE EXCEPTION 'refused mid-batch'; END IF; RETURN NEW; END $$`);
    await db.$executeRawUnsafe(
      `CREATE TRIGGER reseal_refuse BEFORE UPDATE ON webhook_subscriptions FOR EACH ROW EXECUTE FUNCTION reseal_refuse()`,
    );
    try {
      await expect(resealWebhookSecrets(db, { secret: B, previousSecret: A, batchSize: 3 })).rejects.toThrow(/refused mid-batch/);
    } finally {
      await db.$executeRawUnsafe('DROP TRIGGER reseal_refuse ON webhook_subscriptions');
      await db.$executeRawUnsafe('DROP FUNCTION reseal_refuse()');
    }
    const after = await stored();
    const secretOf = new Map(subs.map((s) => [s.id, s.secret]));
    ids.forEach((id, i) => {
      const row = { id, sealedSecret: after.get(id)! };
      // The first batch committed under B; the failed one and those after it kept their bytes under A.
      if (i < 3) expect(opensUnder(row, B), id).toBe(secretOf.get(id));
      else expect(after.get(id)!.equals(before.get(id)!), id).toBe(true);
      expect(openWebhookSecret(row.sealedSecret, id, [B, A])).toBe(secretOf.get(id));
    });

    expect(await resealWebhookSecrets(db, { secret: B, previousSecret: A, batchSize: 3 })).toEqual({
      resealed: 4,
      current: 3,
      unreadable: [],
    });
    const done = await stored();
    for (const id of ids) expect(opensUnder({ id, sealedSecret: done.get(id)! }, B)).toBe(secretOf.get(id));
  });

  it('runs at the server’s start with BETTER_COMPUTE_PREVIOUS_SECRET set, and says what it did', async () => {
    const subs = await subscribeMany('/start', 3, A);
    const unknown = await subscribe('/start-unknown', C);
    const before = await stored();
    const server = await startServerProcess({ databaseUrl: database.url, secret: B, env: { BETTER_COMPUTE_PREVIOUS_SECRET: A } });
    try {
      expect(server.output).toContain('Webhook signing secrets: re-sealed 3 under the new BETTER_COMPUTE_SECRET, 0 already under it.');
      const warnings = server.output.filter((line) => line.includes(unknown.id));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^WARNING: webhook subscription \S+: its signing secret opens under neither/);
      for (const sub of subs) expect(server.output.join('\n')).not.toContain(sub.secret);
      expect(server.output).toContain('BETTER_COMPUTE_PREVIOUS_SECRET is no longer needed: unset it (give every instance the new secret).');
    } finally {
      await server.stop('SIGTERM');
    }
    const after = await stored();
    for (const sub of subs) expect(opensUnder({ id: sub.id, sealedSecret: after.get(sub.id)! }, B)).toBe(sub.secret);
    expect(after.get(unknown.id)!.equals(before.get(unknown.id)!)).toBe(true);
  });
});
