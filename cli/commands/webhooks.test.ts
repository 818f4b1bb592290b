import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgPool } from '../../server/db/pg';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../server/webhooks/config';
import { serverSecrets, webhookSignatureMatches } from '../../server/webhooks/secret';
import { WebhookWorker } from '../../server/webhooks/worker';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDatabaseUrl, testDb } from '../../test/db';
import type { TestTenant } from '../../test/fixtures';

describe('better-compute webhooks', { timeout: 180_000 }, () => {
  let api: ApiServer;
  let pool: pg.Pool;
  let worker: WebhookWorker;
  let t: TestTenant;
  let env: Record<string, string>;
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  const saved = { secret: process.env.BETTER_COMPUTE_SECRET, allow: process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE };

  beforeAll(async () => {
    process.env.BETTER_COMPUTE_SECRET = randomBytes(32).toString('base64url');
    process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = 'true';
    ({ api, t, env } = await startCliApi(testDb()));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    pool = createPgPool(testDatabaseUrl(), 2);
    worker = new WebhookWorker({
      pool,
      databaseUrl: testDatabaseUrl(),
      settings: { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivate: true, sweepMs: 200 },
      secrets: () => serverSecrets(),
      onlyTenants: [t.tenantId],
    });
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
    await pool?.end();
    receiver.close();
    await api?.close();
    process.env.BETTER_COMPUTE_SECRET = saved.secret;
    if (saved.allow === undefined) delete process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE;
    else process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = saved.allow;
  });

  it('create --out, list, update, test, deliveries, redeliver and delete, with --json', async () => {
    const cli = (...args: string[]) => runCliInProcess(args, env);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/cli`;
    const out = path.join(tmpdir(), `webhook-secret-${randomBytes(4).toString('hex')}`);

    const created = await cli(
      'webhooks',
      'create',
      '--tenant',
      t.tenantId,
      '--url',
      url,
      '--events',
      'node.joined,security.join.refused',
      '--out',
      out,
    );
    expect(created.code, created.stderr).toBe(0);
    const secret = (await readFile(out, 'utf8')).trim();
    expect(secret).toMatch(/^whsec_/);
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    expect(created.stdout).not.toContain(secret);
    const id = /webhook (wh_[0-9a-z]+)/.exec(created.stdout)![1]!;

    const listed = await cli('webhooks', 'list', '--tenant', t.tenantId, '--json');
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id, url, eventTypes: ['node.joined', 'security.join.refused'], enabled: true }),
    ]);
    expect(listed.stdout).not.toContain(secret.slice(6));
    const types = JSON.parse((await cli('webhooks', 'event-types', '--tenant', t.tenantId, '--json')).stdout) as string[];
    expect(types).toContain('node.join-request.created');

    const bad = await cli('webhooks', 'create', '--tenant', t.tenantId, '--url', url, '--events', 'node.nonsense');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown event type node.nonsense');

    const updated = await cli('webhooks', 'update', '--tenant', t.tenantId, id, '--events', 'node.cordoned', '--json');
    expect(JSON.parse(updated.stdout)).toMatchObject({ id, eventTypes: ['node.cordoned'] });

    const tested = await cli('webhooks', 'test', '--tenant', t.tenantId, id, '--json');
    expect(tested.code, tested.stderr).toBe(0);
    const delivery = JSON.parse(tested.stdout) as { id: string };
    let items: { id: string; state: string; lastStatus: number | null; attempts: number }[] = [];
    for (let i = 0; i < 200 && items[0]?.state !== 'delivered'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      items = JSON.parse((await cli('webhooks', 'deliveries', '--tenant', t.tenantId, id, '--json')).stdout);
    }
    expect(items).toEqual([expect.objectContaining({ id: delivery.id, state: 'delivered', lastStatus: 200, attempts: 1 })]);
    const got = received.find((r) => r.headers['webhook-id'] === delivery.id)!;
    expect(JSON.parse(got.body)).toMatchObject({ type: 'webhook.test', data: { webhookId: id } });
    expect(
      webhookSignatureMatches(
        secret,
        delivery.id,
        Number(got.headers['webhook-timestamp']),
        got.body,
        String(got.headers['webhook-signature']),
      ),
    ).toBe(true);

    const again = await cli('webhooks', 'redeliver', '--tenant', t.tenantId, id, delivery.id);
    expect(again.code, again.stderr).toBe(0);
    for (let i = 0; i < 200 && received.filter((r) => r.headers['webhook-id'] === delivery.id).length < 2; i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(received.filter((r) => r.headers['webhook-id'] === delivery.id)).toHaveLength(2);

    const table = await cli('webhooks', 'deliveries', '--tenant', t.tenantId, id);
    expect(table.stdout).toMatch(/ID\s+EVENT\s+STATE/);
    const deleted = await cli('webhooks', 'delete', '--tenant', t.tenantId, id);
    expect([deleted.code, deleted.stdout.trim()]).toEqual([0, `Deleted webhook ${id}`]);
    expect(JSON.parse((await cli('webhooks', 'list', '--tenant', t.tenantId, '--json')).stdout)).toEqual([]);
    expect(await testDb().auditEntry.count({ where: { tenantId: t.tenantId, resource: `compute-webhook/${id}` } })).toBe(5);
  });
});
