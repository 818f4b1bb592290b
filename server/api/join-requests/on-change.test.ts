import { describe, expect, it } from 'vitest';
import { readServerSentEvents } from '../../../cli/sse';
import { generateNodeKeyAndCsr } from '../../../agent/keys';
import { testApiServices } from '../../../test/api-services';
import { signedInOperator } from '../../../test/console-session';
import { testDb } from '../../../test/db';
import { createTestTenant } from '../../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims } from '../../../test/join-harness';
import { randomMac } from '../../../test/discovery-harness';
import { createDiscoveryToken } from '../../tokens/site-scoped';
import { handleTrpcRequest } from '../trpc-http';

describe('joinRequests.onChange over server-sent events', () => {
  it('streams the pool’s queue changes to a signed-in subscriber, and refuses another tenant', { timeout: 60_000 }, async () => {
    const h = await createJoinHarness();
    const db = testDb();
    const t = await createTestTenant(db);
    const claim = await signedInOperator(db, t.tenantId, 'viewer');
    const subscribe = (input: object, signal?: AbortSignal) =>
      handleTrpcRequest(
        new Request(`http://console.test/api/trpc/joinRequests.onChange?input=${encodeURIComponent(JSON.stringify(input))}`, {
          signal,
          headers: { accept: 'text/event-stream' },
        }),
        { db, services: testApiServices(), sessionOperatorId: async () => claim },
      );

    const abort = new AbortController();
    const response = await subscribe({ tenantId: t.tenantId, poolId: t.poolId }, abort.signal);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events = readServerSentEvents<{ siteId: string; requestIds: string[] }>(response.body!);
    const first = events.next();
    // The subscription's LISTEN is in place once the stream started; give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const mac = randomMac();
    const token = (await createDiscoveryToken(db, t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
    const pending = await agentJoin(h, token, machineClaims({ macs: [mac] }), {
      role: 'discovery',
      attestor: 'discovery',
      keys: generateNodeKeyAndCsr(),
    });
    const requestId = (pending.answer as unknown as { requestId: string }).requestId;
    const change = await first;
    expect(change.value).toEqual({ siteId: t.siteId, requestIds: [requestId] });
    abort.abort();

    const other = await createTestTenant(db);
    const refused = await subscribe({ tenantId: other.tenantId, poolId: other.poolId });
    const error = await readServerSentEvents(refused.body!)
      .next()
      .catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/not found/i);
  });
});
