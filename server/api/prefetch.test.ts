import { randomBytes } from 'node:crypto';
import { hashKey, QueryClient } from '@tanstack/react-query';
import { createTRPCClient } from '@trpc/client';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { nextQueuePage, queueListInput } from '../../lib/join-request-queue';
import { createOperator, endOperatorSessions } from '../operators/operators';
import { prefetchAsConsole, type PrefetchReader } from './prefetch';
import type { AppRouter } from './root';

/** The keys the console's own proxy (the browser's, over a client that is never called) gives the same inputs. */
const browserKeys = createTRPCOptionsProxy<AppRouter>({
  client: createTRPCClient<AppRouter>({ links: [] }),
  queryClient: new QueryClient(),
});

async function operatorOf(tenantId: string, role: 'viewer' | 'admin') {
  const email = `prefetch-${randomBytes(4).toString('hex')}@example.com`;
  const { id } = await createOperator(testDb(), { email, name: 'Prefetch', password: 'correct-horse-battery-staple', tenantId, role });
  return { operatorId: id, sessionVersion: 1 };
}

describe('prefetchAsConsole', () => {
  it("reads the queue's queries as the session's operator, under the browser's keys", async () => {
    const t = await createTestTenant(testDb());
    const claim = await operatorOf(t.tenantId, 'viewer');
    const input = queueListInput({ tenantId: t.tenantId, poolId: t.poolId }, 'pending', { search: 'rack-7' });
    const read: PrefetchReader = async (trpc, queryClient) => {
      await queryClient.fetchQuery(trpc.tenants.list.queryOptions({}));
      await queryClient.fetchInfiniteQuery(trpc.joinRequests.list.infiniteQueryOptions(input, { getNextPageParam: nextQueuePage }));
    };
    const state = await prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => claim }, read);
    expect(state).not.toBeNull();
    expect(state!.queries.map((q) => q.queryHash).sort()).toEqual(
      [hashKey(browserKeys.tenants.list.queryKey({})), hashKey(browserKeys.joinRequests.list.infiniteQueryKey(input))].sort(),
    );
    const tenants = state!.queries.find((q) => q.queryHash === hashKey(browserKeys.tenants.list.queryKey({})))!;
    expect((tenants.state.data as { items: { id: string }[] }).items.map((item) => item.id)).toEqual([t.tenantId]);
    const list = state!.queries.find((q) => q.queryHash === hashKey(browserKeys.joinRequests.list.infiniteQueryKey(input)))!;
    expect(list.state.status).toBe('success');
    expect(list.state.data).toMatchObject({ pages: [{ items: [], total: 0, nextCursor: null }] });
    // The first page was read with no cursor, as the browser reads it; a re-read sends none either (null is refused).
    expect((list.state.data as { pageParams: unknown[] }).pageParams).toEqual([undefined]);
  });

  it('reads nothing for a session that has ended, or with no session', async () => {
    const t = await createTestTenant(testDb());
    const claim = await operatorOf(t.tenantId, 'admin');
    let reads = 0;
    const read: PrefetchReader = async (trpc, queryClient) => {
      reads++;
      await queryClient.fetchQuery(trpc.tenants.list.queryOptions({}));
    };
    expect(await prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => claim }, read)).not.toBeNull();
    await endOperatorSessions(testDb(), claim.operatorId);
    expect(await prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => claim }, read)).toBeNull();
    expect(await prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => null }, read)).toBeNull();
    expect(reads).toBe(1);
  });

  it("answers null when a read fails: another tenant's queue is refused by the procedure itself", async () => {
    const mine = await createTestTenant(testDb());
    const theirs = await createTestTenant(testDb());
    const claim = await operatorOf(mine.tenantId, 'admin');
    const read: PrefetchReader = async (trpc, queryClient) => {
      await queryClient.fetchQuery(trpc.tenants.list.queryOptions({}));
      const input = queueListInput({ tenantId: theirs.tenantId, poolId: theirs.poolId }, 'pending', {});
      await queryClient.fetchInfiniteQuery(trpc.joinRequests.list.infiniteQueryOptions(input, { getNextPageParam: nextQueuePage }));
    };
    expect(await prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => claim }, read)).toBeNull();
    // The same reader minus the refused read succeeds: the null above is the refusal, not the session.
    const tenantsOnly: PrefetchReader = async (trpc, queryClient) =>
      void (await queryClient.fetchQuery(trpc.tenants.list.queryOptions({})));
    expect(await prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => claim }, tenantsOnly)).not.toBeNull();
  });
});
