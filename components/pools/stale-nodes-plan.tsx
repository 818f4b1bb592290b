'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { Pool } from '@/lib/api-types';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { LocalTime } from '@/components/ui/time';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import { TableScroll } from '@/components/ui/table-scroll';

const ACTION_LABEL = { cordon: 'Cordon', retire: 'Retire' } as const;

/** The dry run: what the pool's stale-node policy would do if it ran now (`pools.staleNodes`). Changes nothing. */
export function StaleNodesPlan({ pool, tenantId }: { pool: Pool; tenantId: string }) {
  const trpc = useTRPC();
  const plan = useQuery(trpc.pools.staleNodes.queryOptions({ tenantId, poolId: pool.id }));
  const headingId = `stale-plan-${pool.id}`;
  return (
    <section aria-labelledby={headingId} className="stale-plan">
      <h3 id={headingId}>What the policy would do now</h3>
      {plan.isPending ? (
        <LoadingRows label="Reading the dry run…" />
      ) : plan.isError ? (
        <QueryError error={plan.error} what="the dry run" onRetry={() => void plan.refetch()} />
      ) : !plan.data.policy ? (
        <p className="panel-empty">No stale-node policy: nothing is cordoned or retired for being disconnected.</p>
      ) : (
        <>
          <p role="status">
            Dry run at <LocalTime iso={plan.data.evaluatedAt} />: would retire <strong>{plan.data.counts.retire}</strong> and cordon{' '}
            <strong>{plan.data.counts.cordon}</strong> {plan.data.counts.retire + plan.data.counts.cordon === 1 ? 'node' : 'nodes'}.{' '}
            <button type="button" className="link-button" onClick={() => void plan.refetch()}>
              Refresh
            </button>
          </p>
          {plan.data.items.length === 0 ? (
            <p className="panel-empty">No node is due.</p>
          ) : (
            <TableScroll label={`Stale nodes of pool ${pool.name}`}>
              <table className="table">
                <caption className="visually-hidden">Nodes the stale-node policy of pool {pool.name} would act on now</caption>
                <thead>
                  <tr>
                    <th scope="col">Step</th>
                    <th scope="col">Node</th>
                    <th scope="col">Disconnected since</th>
                    <th scope="col">Cordoned by the policy</th>
                  </tr>
                </thead>
                <tbody>
                  {plan.data.items.map((step) => (
                    <tr key={step.nodeId}>
                      <td>
                        <span className={`badge ${step.action === 'retire' ? 'badge-warn' : 'badge-info'}`}>
                          {ACTION_LABEL[step.action]}
                        </span>
                      </td>
                      <th scope="row" className="cell-name">
                        <Link href={withTenant(`/nodes/${step.nodeId}`, tenantId)}>{step.hostname ?? step.nodeId}</Link>
                        {step.hostname && <code className="id">{step.nodeId}</code>}
                      </th>
                      <td className="cell-time">
                        <LocalTime iso={step.disconnectedSince} />
                      </td>
                      <td className="cell-time">
                        {step.staleCordonedAt ? <LocalTime iso={step.staleCordonedAt} /> : <span className="muted">not yet</span>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          )}
          {plan.data.items.length < plan.data.counts.retire + plan.data.counts.cordon && (
            <p className="field-hint">
              The first {plan.data.items.length} are listed; <code>better-compute pools stale-nodes {pool.id} --dry-run --limit 1000</code>{' '}
              lists more.
            </p>
          )}
        </>
      )}
    </section>
  );
}
