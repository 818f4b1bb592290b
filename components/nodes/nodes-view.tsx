'use client';

import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { HardwareKeyBadge } from '@/components/join-requests/request-row';
import { LoadMore, QueryStates } from '@/components/ui/query-state';
import { LocalTime } from '@/components/ui/time';
import { nextListPage, nodesListInput } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { machineSummary } from '@/lib/join-request-queue';
import { formatRelative } from '@/lib/join-token-form';
import { useLiveRefresh } from '@/lib/live';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { useNowSince } from '@/lib/use-now';
import { useUrlParams } from '@/lib/url-state';
import { NODE_STATES, type NodeListItem } from '@/protocol/api/node-schemas';
import { SessionCell } from './session-state';
import { NodeBulkBar } from './node-bulk-bar';
import { pickNodeFilter } from '@/protocol/api/node-filter';
import { TableScroll } from '@/components/ui/table-scroll';

export function NodesView() {
  return <TenantGate>{(tenant) => <TenantNodes key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The tenant's nodes, one table per pool (and its site), filtered by `?pool=`, `?state=` and `?connected=`. */
function TenantNodes({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(['pool', 'state', 'connected'] as const);
  const sites = useQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id }));
  const pools = useQuery(trpc.pools.list.queryOptions({ tenantId: tenant.id }));
  const input = nodesListInput(tenant.id, params);
  const { poolId, state, connected } = input;
  const nodes = useInfiniteQuery(trpc.nodes.list.infiniteQueryOptions(input, { getNextPageParam: nextListPage }));
  // A machine joins, renews or is revoked away from this page: re-read on return (no announcement yet).
  useLiveRefresh(trpc.nodes.list.pathFilter(), { eventsOf: tenant.id });
  const now = useNowSince(nodes.dataUpdatedAt);
  const siteNames = new Map(sites.data?.items.map((site) => [site.id, site.name]));
  const poolById = new Map(pools.data?.items.map((pool) => [pool.id, pool]));
  const items = nodes.data?.pages.flatMap((page) => page.items) ?? [];
  const byPool = new Map<string, NodeListItem[]>();
  for (const node of items) byPool.set(node.poolId ?? '', [...(byPool.get(node.poolId ?? '') ?? []), node]);

  return (
    <>
      <PageHeader
        title="Nodes"
        description={
          <>
            Machines that joined, with their identity and acceptance state. Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            <div className="picker">
              <label htmlFor="nodes-pool" className="picker-label">
                Pool
              </label>
              <select id="nodes-pool" value={poolId ?? ''} onChange={(event) => setParams({ pool: event.target.value || null })}>
                <option value="">All pools</option>
                {pools.data?.items.map((pool) => (
                  <option key={pool.id} value={pool.id}>
                    {pool.name} (site {siteNames.get(pool.siteId) ?? pool.siteId})
                  </option>
                ))}
              </select>
            </div>
            <div className="picker">
              <label htmlFor="nodes-state" className="picker-label">
                State
              </label>
              <select id="nodes-state" value={state ?? ''} onChange={(event) => setParams({ state: event.target.value || null })}>
                <option value="">Any state</option>
                {NODE_STATES.map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </select>
            </div>
            <div className="picker">
              <label htmlFor="nodes-connected" className="picker-label">
                Session
              </label>
              <select
                id="nodes-connected"
                value={params.connected ?? ''}
                onChange={(event) => setParams({ connected: event.target.value || null })}
              >
                <option value="">Connected or not</option>
                <option value="true">connected</option>
                <option value="false">disconnected</option>
              </select>
            </div>
          </>
        }
      />
      {/* node-bulk-bar mount (node-page): the list's exact total and ticked rows replace items.length and [] */}
      <NodeBulkBar tenantId={tenant.id} filter={pickNodeFilter(input)} selectedIds={[]} total={items.length} />
      <QueryStates
        query={nodes}
        items={items}
        loading="Loading nodes…"
        what="nodes"
        empty={
          <>
            No node{state ? ` is ${state}` : ' joined'}
            {connected === undefined ? '' : connected ? ' is connected' : ' is disconnected'}
            {poolId ? ' in this pool' : ''} yet. A machine joins with a token from the{' '}
            <Link href={withTenant('/join-tokens', tenant.id)}>Join tokens</Link> page, or is approved on the{' '}
            <Link href={withTenant('/join-requests', tenant.id)}>Join requests</Link> page.
          </>
        }
      >
        {() =>
          [...byPool].map(([pid, poolNodes]) => {
            const pool = poolById.get(pid);
            const siteId = pool?.siteId ?? poolNodes[0]!.siteId;
            return (
              <section key={pid} className="panel" aria-labelledby={`nodes-${pid || 'none'}`}>
                <header className="panel-header">
                  <h2 id={`nodes-${pid || 'none'}`}>
                    <span className="panel-eyebrow">Pool </span>
                    {pool?.name ?? (pid || 'no pool')}
                  </h2>
                  <span className="badge">site {siteNames.get(siteId) ?? siteId}</span>
                  <span className="panel-meta">
                    {poolNodes.length} {poolNodes.length === 1 ? 'node' : 'nodes'}
                  </span>
                </header>
                <NodeTable nodes={poolNodes} tenantId={tenant.id} now={now} />
              </section>
            );
          })
        }
      </QueryStates>
      <LoadMore query={nodes} label="Load more nodes" />
    </>
  );
}

function NodeTable({ nodes, tenantId, now }: { nodes: NodeListItem[]; tenantId: string; now: number }) {
  return (
    <TableScroll label="Nodes">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">State</th>
            <th scope="col">Session</th>
            <th scope="col">Machine</th>
            <th scope="col">Trust</th>
            <th scope="col">Role</th>
            <th scope="col">Generation</th>
            <th scope="col">Certificate</th>
            <th scope="col">Joined with</th>
            <th scope="col">Joined at</th>
          </tr>
        </thead>
        <tbody>
          {nodes.map((node) => (
            <tr key={node.id} className={node.state === 'retired' ? 'row-archived' : undefined}>
              <th scope="row" className="cell-name">
                <Link href={withTenant(`/nodes/${node.id}`, tenantId)}>
                  <code>{node.id}</code>
                </Link>
              </th>
              <td>
                <span className={`status status-${node.state}`}>{node.state}</span>
                {node.cordoned && <span className="badge badge-warn">cordoned</span>}
              </td>
              <td className="cell-time">
                <SessionCell session={node.session} now={now} />
              </td>
              <td className="cell-machine-summary" title={machineSummary(node.claims) || undefined}>
                {machineSummary(node.claims) || <span className="muted">no claims</span>}
                {node.joinRequestId && (
                  <span className="cell-sub">
                    admitted by{' '}
                    <Link href={withTenant(`/join-requests?pool=${node.poolId ?? ''}&state=all&request=${node.joinRequestId}`, tenantId)}>
                      {node.joinRequestId}
                    </Link>
                  </span>
                )}
              </td>
              <td>
                {node.trust}
                <span className="cell-sub">
                  <HardwareKeyBadge
                    hasKey={node.hasHardwareKey}
                    isTrusted={node.hardwareKeyTrusted}
                    isRamdisk={node.attestor === 'discovery'}
                  />
                </span>
              </td>
              <td>{node.role}</td>
              <td className="cell-number">{node.identityGeneration}</td>
              <td className="cell-time">
                {node.certificate ? (
                  <>
                    <code title={node.certificate.serial}>{node.certificate.serial.slice(0, 12)}…</code>
                    <span className="cell-sub" title={node.certificate.notAfter}>
                      expires {formatRelative(node.certificate.notAfter, now)}
                    </span>
                  </>
                ) : (
                  <span className="muted">no live certificate</span>
                )}
              </td>
              <td>
                {node.attestor}
                {node.joinTokenId && (
                  <span className="cell-sub">
                    <code>{node.joinTokenId}</code>
                  </span>
                )}
              </td>
              <td className="cell-time">
                <LocalTime iso={node.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}
