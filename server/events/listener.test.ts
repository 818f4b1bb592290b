import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readServerSentEvents } from '../../cli/sse';
import { testApiServices } from '../../test/api-services';
import { testDatabaseUrl, testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { handleTrpcRequest } from '../api/trpc-http';
import { createOperator } from '../operators/operators';
import { EventsListener, watchEvents, type EventsChange } from './listener';

let h: JoinHarness;
// Its own connection, as another server instance would hold it.
const listener = new EventsListener(testDatabaseUrl());
beforeAll(async () => {
  h = await createJoinHarness();
});
afterAll(() => listener.close());

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Collects one tenant's announcements until the returned stop() is called. */
async function collect(tenantId: string) {
  const abort = new AbortController();
  const seen: EventsChange[] = [];
  const done = (async () => {
    for await (const change of watchEvents(listener, tenantId, abort.signal)) seen.push(change);
  })();
  // LISTEN is in place once the first subscriber connected.
  await settle(300);
  return { seen, stop: async () => (abort.abort(), await done) };
}

describe('events.onChange', () => {
  it('announces a join’s events (written by the admission statement) to its tenant only, once per statement', async () => {
    const t = await createTestTenant(testDb());
    const other = await createTestTenant(testDb());
    const mine = await collect(t.tenantId);

    // Another tenant's join announces nothing here.
    const otherToken = (await mintToken(other)).token!;
    expect((await agentJoin(h, otherToken, machineClaims())).status).toBe(200);
    await settle(500);
    expect(mine.seen).toEqual([]);

    const token = (await mintToken(t)).token!;
    expect((await agentJoin(h, token, machineClaims())).status).toBe(200);
    await expect.poll(() => mine.seen.length, { timeout: 5_000 }).toBeGreaterThan(0);
    expect(mine.seen[0]).toEqual({ tenantId: t.tenantId });
    // A join may write more than one statement of events (its admission, a token used up): let them land.
    await settle(800);

    // Five events in one statement: one announcement (the trigger runs per statement, and PostgreSQL folds
    // identical notifications of a transaction).
    const before = mine.seen.length;
    await testDb().$executeRawUnsafe(
      `INSERT INTO events (tenant_id, type, data) SELECT $1, 'test.burst', jsonb_build_object('i', i) FROM generate_series(1, 5) i`,
      t.tenantId,
    );
    await expect.poll(() => mine.seen.length, { timeout: 5_000 }).toBe(before + 1);
    await settle(300);
    expect(mine.seen.length).toBe(before + 1);
    await mine.stop();
  });

  it('streams over server-sent events to a signed-in viewer, and refuses another tenant', { timeout: 60_000 }, async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const other = await createTestTenant(db);
    const email = `viewer-${randomBytes(4).toString('hex')}@example.com`;
    const { id } = await createOperator(db, {
      email,
      name: 'Viewer',
      password: 'correct-horse-battery',
      tenantId: t.tenantId,
      role: 'viewer',
    });
    const subscribe = (tenantId: string, signal?: AbortSignal) =>
      handleTrpcRequest(
        new Request(`http://console.test/api/trpc/events.onChange?input=${encodeURIComponent(JSON.stringify({ tenantId }))}`, {
          signal,
          headers: { accept: 'text/event-stream' },
        }),
        { db, services: testApiServices(), sessionOperatorId: async () => ({ operatorId: id, sessionVersion: 1 }) },
      );

    const abort = new AbortController();
    const response = await subscribe(t.tenantId, abort.signal);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const stream = readServerSentEvents<{ tenantId: string }>(response.body!);
    const first = stream.next();
    await settle(300);
    const token = (await mintToken(t)).token!;
    expect((await agentJoin(h, token, machineClaims())).status).toBe(200);
    expect((await first).value).toEqual({ tenantId: t.tenantId });
    abort.abort();

    const refused = await subscribe(other.tenantId);
    const error = await readServerSentEvents(refused.body!)
      .next()
      .catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/not found/i);
  });
});
