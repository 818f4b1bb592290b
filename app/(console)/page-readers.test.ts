import { randomBytes } from 'node:crypto';
import { hashKey, QueryClient } from '@tanstack/react-query';
import { createTRPCClient } from '@trpc/client';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { nextQueuePage, queueListInput } from '../../lib/join-request-queue';
import {
  auditListInput,
  eventsListInput,
  joinTokensListInput,
  nodeEventsInput,
  nodesListInput,
  overviewRange,
  refusedJoinsInput,
} from '../../lib/console-page-inputs';
import {
  readApiKeys,
  readApprovalRules,
  readAudit,
  readConsolePage,
  readEvents,
  readExpectedMachines,
  readJoinRequests,
  readJoinTokens,
  readNode,
  readNodes,
  readOperators,
  readOverview,
  readPools,
  readSites,
  readRefusedJoins,
  readWebhooks,
  type TenantPageReader,
} from './page-readers';
import { createOperator, endOperatorSessions } from '../../server/operators/operators';
import { prefetchAsConsole, type PrefetchReader } from '../../server/api/prefetch';
import type { AppRouter } from '../../server/api/root';

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

describe("each console page's read-ahead", () => {
  type Key = readonly unknown[];
  const tenants = browserKeys.tenants.list.queryKey({});
  /**
   * Per page: its reader, a URL, and the keys its view asks for on its first render in the browser (inputs from
   * the functions the views call, through the browser's proxy). `sites`/`pools` are the tenant-wide lists.
   */
  const pages = (
    t: { tenantId: string; poolId: string; siteId: string },
    nodeId: string,
  ): [string, TenantPageReader | undefined, string, Key[]][] => {
    const tenantId = t.tenantId;
    const sites = browserKeys.sites.list.queryKey({ tenantId });
    const pools = browserKeys.pools.list.queryKey({ tenantId });
    const scope = { tenantId, siteId: t.siteId };
    return [
      ['overview', readOverview, '?range=7d', [browserKeys.overview.get.queryKey({ tenantId, range: overviewRange('7d') })]],
      [
        'pools',
        readPools,
        '',
        [
          browserKeys.sites.list.queryKey({ tenantId, includeArchived: false }),
          browserKeys.pools.list.queryKey({ tenantId, includeArchived: false }),
          browserKeys.pools.counts.queryKey({ tenantId }),
        ],
      ],
      ['sites', readSites, '', [browserKeys.sites.list.queryKey({ tenantId, includeArchived: false })]],
      [
        'join tokens',
        readJoinTokens,
        '',
        [sites, pools, browserKeys.joinTokens.list.infiniteQueryKey(joinTokensListInput(tenantId, t.poolId, false))],
      ],
      [
        'join requests',
        readJoinRequests,
        '?q=rack-7',
        [
          sites,
          pools,
          browserKeys.joinRequests.list.infiniteQueryKey(queueListInput({ tenantId, poolId: t.poolId }, 'pending', { search: 'rack-7' })),
        ],
      ],
      [
        'nodes',
        readNodes,
        `?pool=${t.poolId}&state=adopted&connected=true`,
        [
          sites,
          pools,
          browserKeys.nodes.list.infiniteQueryKey(nodesListInput(tenantId, { pool: t.poolId, state: 'adopted', connected: 'true' })),
        ],
      ],
      [
        'node',
        readNode(nodeId),
        '',
        [browserKeys.nodes.get.queryKey({ tenantId, nodeId }), browserKeys.events.list.infiniteQueryKey(nodeEventsInput(tenantId, nodeId))],
      ],
      [
        'refused joins',
        readRefusedJoins,
        '?reason=join-token:revoked',
        [browserKeys.events.list.infiniteQueryKey(refusedJoinsInput(tenantId, { reason: 'join-token:revoked' }))],
      ],
      // A range starts at the browser's clock: the list is left to the browser.
      ['refused joins in a range', readRefusedJoins, '?range=1h', []],
      [
        'events',
        readEvents,
        '?type=node.joined',
        [browserKeys.events.list.infiniteQueryKey(eventsListInput(tenantId, { type: 'node.joined' }))],
      ],
      [
        'audit',
        readAudit,
        '?actor=someone',
        [
          browserKeys.audit.facets.queryKey({ tenantId }),
          browserKeys.audit.list.infiniteQueryKey(auditListInput(tenantId, { actor: 'someone', action: null })),
        ],
      ],
      // A range starts at the browser's clock: the list is left to the browser.
      ['audit in a range', readAudit, '?range=24h', []],
      ['approval rules', readApprovalRules, '', [sites, pools, browserKeys.approvalRules.list.queryKey(scope)]],
      [
        'expected machines',
        readExpectedMachines,
        `?site=${t.siteId}`,
        [
          sites,
          pools,
          browserKeys.expectedMachines.list.queryKey({ ...scope, state: 'waiting' }),
          browserKeys.expectedMachines.list.queryKey({ ...scope, state: 'arrived' }),
          browserKeys.expectedMachines.unmatched.queryKey(scope),
        ],
      ],
      ['webhooks', readWebhooks, '', [browserKeys.webhooks.list.queryKey({ tenantId })]],
      [
        'operators',
        readOperators,
        '',
        [browserKeys.operators.list.queryKey({ tenantId }), browserKeys.invitations.list.queryKey({ tenantId })],
      ],
      ['API keys', readApiKeys, '', [browserKeys.apiKeys.list.queryKey({ tenantId })]],
      ['tenants (and account)', undefined, '', []],
    ];
  };

  it('reads, as an admin, the queries each page asks for in the browser, under the same keys, all successfully', async () => {
    const t = await createTestTenant(testDb());
    const claim = await operatorOf(t.tenantId, 'admin');
    const nodeId = `node_${randomBytes(8).toString('hex')}`;
    for (const [page, reader, search, keys] of pages(t, nodeId)) {
      const params = new URLSearchParams(`${search}&tenant=${t.tenantId}`);
      const state = await prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => claim }, readConsolePage(params, reader));
      const expected = [tenants, ...keys].map((key) => hashKey(key));
      // The node page's node does not exist: that one read fails and is left to the browser, the others are handed over.
      const missing = page === 'node' ? [hashKey(browserKeys.nodes.get.queryKey({ tenantId: t.tenantId, nodeId }))] : [];
      expect(state, page).not.toBeNull();
      expect(state!.queries.map((q) => q.queryHash).sort(), page).toEqual(expected.filter((hash) => !missing.includes(hash)).sort());
      expect(
        state!.queries.filter((q) => q.state.status !== 'success'),
        page,
      ).toEqual([]);
    }
  });

  it("reads a viewer's pages with the viewer's own authorization: what the role may not read is not read", async () => {
    const t = await createTestTenant(testDb());
    const claim = await operatorOf(t.tenantId, 'viewer');
    const read = (reader: TenantPageReader) =>
      prefetchAsConsole({ db: testDb(), sessionOperatorId: async () => claim }, readConsolePage(new URLSearchParams(), reader));
    // Operators, invitations and webhooks are the admins' to read: the page says so without asking.
    for (const reader of [readOperators, readWebhooks])
      expect((await read(reader))!.queries.map((q) => q.queryHash)).toEqual([hashKey(tenants)]);
    const keys = await read(readApiKeys);
    expect(keys!.queries.map((q) => [q.queryHash, q.state.status])).toEqual([
      [hashKey(tenants), 'success'],
      [hashKey(browserKeys.apiKeys.list.queryKey({ tenantId: t.tenantId })), 'success'],
    ]);
  });

  it("reads nothing but the tenants for a ?tenant= the operator is not a member of, and only the operator's tenants", async () => {
    const mine = await createTestTenant(testDb());
    const theirs = await createTestTenant(testDb());
    const claim = await operatorOf(mine.tenantId, 'admin');
    for (const tenant of [theirs.tenantId, theirs.name]) {
      const state = await prefetchAsConsole(
        { db: testDb(), sessionOperatorId: async () => claim },
        readConsolePage(new URLSearchParams({ tenant }), readNodes),
      );
      expect(state!.queries.map((q) => q.queryHash)).toEqual([hashKey(tenants)]);
    }
  });
});
