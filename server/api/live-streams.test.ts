import { randomBytes } from 'node:crypto';
import { encode } from 'next-auth/jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readServerSentEvents } from '../../cli/sse';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import {
  createServerDatabase,
  newServerSecret,
  startServerProcess,
  type ServerDatabase,
  type ServerProcess,
} from '../../test/server-process';
import { insertApiKey, revokeApiKey } from '../api-keys/api-keys';
import { publishEvent } from '../events/publish';
import { createOperator, endOperatorSessions } from '../operators/operators';

const NEXTAUTH_SECRET = `live-streams-${randomBytes(16).toString('hex')}`;
const MAX_SECONDS = 10;
const PER_PRINCIPAL = 2;

let database: ServerDatabase;
let server: ServerProcess;
let t: TestTenant;

beforeAll(async () => {
  database = await createServerDatabase('live_streams');
  server = await startServerProcess({
    databaseUrl: database.url,
    secret: newServerSecret(),
    env: {
      NEXTAUTH_SECRET,
      BETTER_COMPUTE_STREAM_RECHECK_SECONDS: '1',
      BETTER_COMPUTE_STREAM_MAX_SECONDS: String(MAX_SECONDS),
      BETTER_COMPUTE_STREAMS_PER_PRINCIPAL: String(PER_PRINCIPAL),
      BETTER_COMPUTE_JOIN_THREADS: '0',
    },
  });
  t = await createTestTenant(database.db);
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await database?.close();
});

type Ending = { how: 'return' | 'closed' } | { how: 'error'; code: string | undefined; message: string };

/** Opens a subscription on the server process over HTTP and reads it until it ends. */
async function subscribe(path: string, input: object, headers: Record<string, string>) {
  const abort = new AbortController();
  const response = await fetch(`${server.url}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`, {
    headers: { ...headers, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  const items: unknown[] = [];
  const startedAt = Date.now();
  const ended: Promise<Ending & { afterMs: number }> = (async () => {
    const events = readServerSentEvents(response.body!);
    try {
      for (;;) {
        const next = await events.next();
        if (next.done) return { how: next.value, afterMs: Date.now() - startedAt };
        items.push(next.value);
      }
    } catch (error) {
      return {
        how: 'error' as const,
        code: (error as { code?: string }).code,
        message: (error as Error).message,
        afterMs: Date.now() - startedAt,
      };
    }
  })();
  return { items, ended, close: () => abort.abort() };
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with the ending, or 'still open' after `ms`. */
const within = <T>(promise: Promise<T>, ms: number) => Promise.race([promise, settle(ms).then(() => 'still open' as const)]);

async function apiKey(role: 'admin' | 'viewer' = 'viewer') {
  const { key, id } = await insertApiKey(
    database.db,
    { tenantId: t.tenantId, role, name: `live-${randomBytes(3).toString('hex')}` },
    'test',
  );
  return { id, headers: { authorization: `Bearer ${key}` } };
}

async function session(role: 'admin' | 'viewer' = 'viewer') {
  const email = `live-${randomBytes(4).toString('hex')}@example.com`;
  const { id } = await createOperator(database.db, { email, name: 'Live', password: 'correct-horse-battery', tenantId: t.tenantId, role });
  const cookie = await encode({ token: { sub: id, email, sv: 1 }, secret: NEXTAUTH_SECRET });
  return { id, headers: { cookie: `next-auth.session-token=${cookie}` } };
}

const announce = () => publishEvent(database.db, { tenantId: t.tenantId, type: 'test.live-stream', data: {} });

describe('live streams decide their caller while they run (against the server process)', { timeout: 90_000 }, () => {
  it('deliver, then end within seconds when the API key is revoked', async () => {
    const key = await apiKey();
    const stream = await subscribe('events.onChange', { tenantId: t.tenantId }, key.headers);
    await settle(500);
    await announce();
    await expect.poll(() => stream.items.length, { timeout: 5_000 }).toBe(1);
    await revokeApiKey(database.db, t.admin, { tenantId: t.tenantId, apiKeyId: key.id });
    const revokedAt = Date.now();
    const ending = await within(stream.ended, 6_000);
    expect(ending).toMatchObject({ how: 'error', code: 'UNAUTHENTICATED' });
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
    // Nothing is delivered after the end.
    await announce();
    await settle(500);
    expect(stream.items).toHaveLength(1);
  });

  it('end within seconds when the API key expires', async () => {
    const key = await apiKey();
    const stream = await subscribe('events.onChange', { tenantId: t.tenantId }, key.headers);
    await settle(500);
    await database.db.apiKey.update({ where: { id: key.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await within(stream.ended, 5_000)).toMatchObject({ how: 'error', code: 'UNAUTHENTICATED' });
  });

  it('end within seconds when the session version moves on (sign-out everywhere)', async () => {
    const s = await session();
    const stream = await subscribe('joinRequests.onChange', { tenantId: t.tenantId, poolId: t.poolId }, s.headers);
    await settle(500);
    expect(await within(stream.ended, 1)).toBe('still open');
    await endOperatorSessions(database.db, s.id);
    expect(await within(stream.ended, 5_000)).toMatchObject({ how: 'error', code: 'UNAUTHENTICATED' });
  });

  it('end when the membership is taken away, with the error table’s NOT_FOUND', async () => {
    const s = await session();
    const stream = await subscribe('events.onChange', { tenantId: t.tenantId }, s.headers);
    await settle(500);
    await database.db.membership.delete({ where: { operatorId_tenantId: { operatorId: s.id, tenantId: t.tenantId } } });
    expect(await within(stream.ended, 5_000)).toMatchObject({ how: 'error', code: 'NOT_FOUND' });
  });

  it('refuse another tenant with NOT_FOUND, not INTERNAL_SERVER_ERROR', async () => {
    const other = await createTestTenant(database.db);
    const key = await apiKey();
    for (const [path, input] of [
      ['events.onChange', { tenantId: other.tenantId }],
      ['joinRequests.onChange', { tenantId: other.tenantId, poolId: other.poolId }],
    ] as const) {
      const stream = await subscribe(path, input, key.headers);
      expect(await within(stream.ended, 5_000), path).toMatchObject({ how: 'error', code: 'NOT_FOUND' });
    }
  });

  it(`hold at most ${PER_PRINCIPAL} streams per caller; a closed one frees its place`, async () => {
    const key = await apiKey();
    const open = [
      await subscribe('events.onChange', { tenantId: t.tenantId }, key.headers),
      await subscribe('events.onChange', { tenantId: t.tenantId }, key.headers),
    ];
    await settle(300);
    const refused = await subscribe('events.onChange', { tenantId: t.tenantId }, key.headers);
    expect(await within(refused.ended, 5_000)).toMatchObject({
      how: 'error',
      code: 'INVALID_STATE',
      message: expect.stringMatching(/too many live streams/i),
    });
    // Another caller is not affected.
    const other = await subscribe('events.onChange', { tenantId: t.tenantId }, (await apiKey()).headers);
    await settle(300);
    expect(await within(other.ended, 1)).toBe('still open');
    open[0]!.close();
    await settle(500);
    const again = await subscribe('events.onChange', { tenantId: t.tenantId }, key.headers);
    await settle(300);
    expect(await within(again.ended, 1)).toBe('still open');
    for (const s of [open[1]!, other, again]) s.close();
  });

  it(`are closed by the server after ${MAX_SECONDS} s, without an error (the client reconnects)`, async () => {
    const stream = await subscribe('events.onChange', { tenantId: t.tenantId }, (await apiKey()).headers);
    const ending = await within(stream.ended, (MAX_SECONDS + 5) * 1000);
    expect(ending).toMatchObject({ how: 'closed' });
    expect((ending as { afterMs: number }).afterMs).toBeGreaterThanOrEqual(MAX_SECONDS * 1000 - 500);
  });
});
